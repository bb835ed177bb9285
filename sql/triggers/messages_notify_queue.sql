-- Trigger _500_notify_queue on herald.messages (AFTER INSERT, FOR EACH STATEMENT)
-- and its function herald._notify_queue().
--
-- Wakes the runners: NOTIFY on channel 'herald_queue' with an empty payload, once
-- per INSERT statement (a 1,000-row enqueue_batch sends one notification), and only
-- when at least one inserted row is ready now (a scheduled message is found by the
-- runners' poll instead). The payload carries nothing: listeners claim through
-- herald.claim_batch, and a notification is only a hint (they also poll).
-- Postgres delivers it at commit and folds duplicates within one transaction.
-- Cost: a transaction that notifies takes a cluster-wide lock briefly at commit
-- (see README, "Known costs").
-- The channel name 'herald_queue' is part of herald's contract.
CREATE OR REPLACE FUNCTION herald._notify_queue()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF EXISTS (SELECT FROM new_rows r WHERE r.status = 'queued' AND r.run_at <= now()) THEN
    PERFORM pg_notify('herald_queue', '');
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
