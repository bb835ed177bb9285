-- Trigger _100_log_accepted on herald.messages (AFTER INSERT, FOR EACH STATEMENT)
-- and its function herald._log_accepted().
--
-- Appends an 'accepted' event per inserted message to herald.log_pending, in id
-- order, with one INSERT per statement (the reservation is per statement, not per
-- row), and wakes log consumers (NOTIFY herald_log, throttled by herald._notify).
-- No offset is taken here: herald.log_sequence gives offsets once the producer's
-- transaction has committed, so producers never wait on a shared counter.
-- Named _100_ so it runs before the _500_ notifications.
CREATE OR REPLACE FUNCTION herald._log_accepted()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  INSERT INTO herald.log_pending (message_id, kind, channel, key_hash, at)
  SELECT r.id, 'accepted', r.channel, hashtext(coalesce(r.ordering_key, r.recipient)), r.created_at
  FROM new_rows r
  ORDER BY r.id;
  IF FOUND THEN
    PERFORM herald._notify('herald_log');
  END IF;
  RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION herald._log_accepted() FROM PUBLIC;

CREATE OR REPLACE TRIGGER _100_log_accepted
  AFTER INSERT ON herald.messages
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT
  EXECUTE FUNCTION herald._log_accepted();
