-- Trigger _500_notify_queue on herald.messages (AFTER INSERT, FOR EACH STATEMENT)
-- and its function herald._notify_queue().
--
-- Wakes the runners when a statement inserted at least one message that is ready now
-- (a scheduled message is found by the runners' poll instead): NOTIFY herald_queue
-- with an empty payload, throttled by herald._notify (at most about one notification
-- per herald.notify_interval_ms). Once per statement: a 1,000-row enqueue_batch
-- notifies once. The payload carries nothing: listeners claim through
-- herald.claim_batch, and a notification is only a hint (they also poll).
-- The channel name herald_queue is part of herald's contract.
CREATE OR REPLACE FUNCTION herald._notify_queue()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  IF EXISTS (SELECT FROM new_rows r WHERE r.status = 'queued' AND r.run_at <= now()) THEN
    PERFORM herald._notify('herald_queue');
  END IF;
  RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION herald._notify_queue() FROM PUBLIC;

CREATE OR REPLACE TRIGGER _500_notify_queue
  AFTER INSERT ON herald.messages
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT
  EXECUTE FUNCTION herald._notify_queue();
