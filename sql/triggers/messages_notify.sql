-- Trigger _900_messages_notify on herald.messages (AFTER INSERT, FOR EACH STATEMENT)
-- and its function herald._messages_notify(): once per INSERT statement (a 1,000-row
-- batch fires it once) it wakes the runners (NOTIFY herald_queue) and log consumers
-- (NOTIFY herald_log) through herald._notify, only when a listener may be waiting or
-- none went out for herald.notify_interval_ms (herald._notify_clock_due of the smaller
-- of the two clocks, tested inline before the call). Payloads are empty: a
-- notification is a hint, listeners also poll. No transition table (capturing one
-- costs every producer's statement): so a scheduled message also wakes a waiting
-- runner, which finds nothing to claim. The channel names are part of the contract.
-- Locks: none besides NOTIFY's at commit.
CREATE OR REPLACE FUNCTION herald._messages_notify()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  -- The test inline (herald._notify_clock_due is one inlined expression): most
  -- statements of a busy queue notify nobody and so make no nested call.
  IF herald._notify_clock_due(least(coalesce(pg_sequence_last_value('herald.notify_clock_queue'::regclass), 0),
                                    coalesce(pg_sequence_last_value('herald.notify_clock_log'::regclass), 0))) THEN
    PERFORM herald._notify(ARRAY['herald_queue', 'herald_log']);
  END IF;
  RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION herald._messages_notify() FROM PUBLIC;

CREATE OR REPLACE TRIGGER _900_messages_notify
  AFTER INSERT ON herald.messages
  FOR EACH STATEMENT
  EXECUTE FUNCTION herald._messages_notify();
COMMENT ON FUNCTION herald._messages_notify() IS
  'Private: the function of trigger _900_messages_notify.';
COMMENT ON TRIGGER _900_messages_notify ON herald.messages IS
  'Wakes runners and log consumers (NOTIFY herald_queue, herald_log) once per INSERT statement, when one may be waiting.';
