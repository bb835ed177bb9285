-- Trigger _100_messages_next_in_order on herald.messages (AFTER UPDATE OF status, FOR
-- EACH ROW, for a message with an ordering key leaving queued/processing) and its
-- function herald._messages_next_in_order(): releases the key's next message if held
-- (herald._next_in_order). The key is noted in herald.ordering_rechecks, for
-- herald.reap_stale to settle, when that cannot tell now, or when an enqueue still in
-- progress holds the finished message FOR KEY SHARE (it stored a message held behind
-- it, which this transaction cannot see). Every exit passes here, whichever function
-- made it. SECURITY DEFINER: the private functions are the owner's. Locks: those of
-- herald._next_in_order, and FOR UPDATE on the finished row; never waits.
CREATE OR REPLACE FUNCTION herald._messages_next_in_order()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF NOT herald._next_in_order(producer => OLD.producer, ordering_key => OLD.ordering_key)
     OR NOT EXISTS (SELECT FROM herald.messages m WHERE m.id = OLD.id FOR UPDATE SKIP LOCKED) THEN
    INSERT INTO herald.ordering_rechecks (producer, ordering_key, message_id)
    VALUES (OLD.producer, OLD.ordering_key, OLD.id);
  END IF;
  RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION herald._messages_next_in_order() FROM PUBLIC;

CREATE OR REPLACE TRIGGER _100_messages_next_in_order
  AFTER UPDATE OF status ON herald.messages
  FOR EACH ROW
  WHEN (OLD.ordering_key IS NOT NULL AND OLD.status IN ('queued', 'processing')
        AND NEW.status NOT IN ('queued', 'processing'))
  EXECUTE FUNCTION herald._messages_next_in_order();
COMMENT ON FUNCTION herald._messages_next_in_order() IS
  'Private: the function of trigger _100_messages_next_in_order.';
COMMENT ON TRIGGER _100_messages_next_in_order ON herald.messages IS
  'When a message with an ordering key finishes, releases the next message of its key (herald._next_in_order).';
