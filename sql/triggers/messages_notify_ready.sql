-- Trigger _500_notify_ready on herald.messages (AFTER UPDATE, FOR EACH STATEMENT)
-- and its function herald._notify_ready().
--
-- Wakes the runners when an update made messages ready now that were not: a lease
-- reaped by reap_stale, a redrive, a failure retried at once (retry_at <= now).
-- NOTIFY herald_queue, throttled by herald._notify. Statements that leave no row
-- queued (claim_batch, complete, extend_lease) return after one scan of the
-- transition table.
CREATE OR REPLACE FUNCTION herald._notify_ready()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  IF NOT EXISTS (SELECT FROM new_rows n WHERE n.status = 'queued' AND n.run_at <= now()) THEN
    RETURN NULL;
  END IF;
  IF EXISTS (SELECT FROM new_rows n JOIN old_rows o ON o.id = n.id
             WHERE n.status = 'queued' AND n.run_at <= now()
               AND (o.status <> 'queued' OR o.run_at > now())) THEN
    PERFORM herald._notify(ARRAY['herald_queue']);
  END IF;
  RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION herald._notify_ready() FROM PUBLIC;

CREATE OR REPLACE TRIGGER _500_notify_ready
  AFTER UPDATE ON herald.messages
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT
  EXECUTE FUNCTION herald._notify_ready();
