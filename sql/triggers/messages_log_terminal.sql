-- Trigger _100_log_terminal on herald.messages (AFTER UPDATE, FOR EACH STATEMENT)
-- and its function herald._log_terminal().
--
-- Appends a 'sent', 'dead' or 'cancelled' event to herald.log_pending for every row
-- the statement moved into that terminal state (comparing the old and new transition
-- tables, so a later update of a finished row adds nothing), in id order, with one
-- INSERT per statement; wakes log consumers (NOTIFY herald_log, throttled).
-- detail: sent {provider_message_id, attempts}; dead {error_class, error, attempts};
-- cancelled {}. Statements that finish nothing (claim_batch, extend_lease) return
-- after one scan of the transition table.
CREATE OR REPLACE FUNCTION herald._log_terminal()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  IF NOT EXISTS (SELECT FROM new_rows n WHERE n.status IN ('sent', 'dead', 'cancelled')) THEN
    RETURN NULL;
  END IF;
  INSERT INTO herald.log_pending (message_id, kind, channel, key_hash, at, detail)
  SELECT n.id, n.status, n.channel, hashtext(coalesce(n.ordering_key, n.recipient)), n.finished_at,
         CASE n.status
           WHEN 'sent' THEN jsonb_strip_nulls(jsonb_build_object(
             'provider_message_id', n.provider_message_id, 'attempts', n.attempts))
           WHEN 'dead' THEN jsonb_strip_nulls(jsonb_build_object(
             'error_class', n.last_error_class, 'error', n.last_error, 'attempts', n.attempts))
           ELSE '{}'::jsonb
         END
  FROM new_rows n
  JOIN old_rows o ON o.id = n.id
  WHERE n.status IN ('sent', 'dead', 'cancelled')
    AND o.status IS DISTINCT FROM n.status
  ORDER BY n.id;
  IF FOUND THEN
    PERFORM herald._notify(ARRAY['herald_log']);
  END IF;
  RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION herald._log_terminal() FROM PUBLIC;

CREATE OR REPLACE TRIGGER _100_log_terminal
  AFTER UPDATE ON herald.messages
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT
  EXECUTE FUNCTION herald._log_terminal();
