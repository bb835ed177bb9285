-- Trigger _900_messages_notify on herald.messages (AFTER INSERT, FOR EACH STATEMENT)
-- and its function herald._messages_notify().
--
-- Once per INSERT statement (a 1,000-row enqueue_batch fires it once) it wakes the
-- runners (NOTIFY herald_queue) and log consumers (NOTIFY herald_log) through
-- herald._notify, which notifies only when a listener may be waiting (it called
-- claim_batch or log_read since the last notification) or none went out for
-- herald.notify_interval_ms. It tests that rule first, inlined, and calls
-- herald._notify only when it holds for either channel: herald._notify_clock_due of
-- the smaller of the two notify clocks — two sequence reads and one clock
-- comparison, where testing herald._notify_due per channel repeats the comparison.
-- PostgreSQL compiles this test anew in every transaction, so its size counts:
-- with release 5's four clocks (a listen and a notify clock per channel) the trigger
-- cost 13 % of single-row enqueue throughput, now about 5 % (README "Performance").
-- Payloads are empty: a notification is a hint, listeners also poll. The channel
-- names herald_queue and herald_log are part of herald's contract.
-- No transition table: capturing one costs every producer's statement (measured:
-- about a sixth of single-row enqueue throughput), and the 'accepted' log events are
-- appended by the enqueue functions themselves, in the statement that inserts. So a
-- scheduled message (run_at in the future) also wakes a waiting runner, which then
-- finds nothing to claim: harmless. Also fires for rows inserted by hand, which get
-- no 'accepted' event (the enqueue functions are the way in).
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
