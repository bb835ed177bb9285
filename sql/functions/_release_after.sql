-- herald._release_after(ids) — called by every function that ends messages with an
-- ordering key (complete, fail, cancel, reap_stale; claim_batch through
-- herald.ordering_rechecks), after its statement, with their ids: for each, release
-- the key's next message if it is held (herald._next_in_order). The key is noted in
-- herald.ordering_rechecks, for herald.reap_stale to settle, when that cannot tell
-- now, or when an enqueue still in progress holds the finished message FOR KEY SHARE
-- (it stored a message held behind it, which this transaction cannot see). Explicit
-- calls, not a trigger: an AFTER UPDATE row trigger cost every message's claim and
-- report its check (3.7 % of a drain). Index: messages_pkey. Locks: those of
-- herald._next_in_order, and FOR UPDATE on the finished rows; never waits.
CREATE OR REPLACE FUNCTION herald._release_after(ids bigint[])
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT m.id, m.producer, m.ordering_key FROM herald.messages m
           WHERE m.id = ANY (_release_after.ids) AND m.ordering_key IS NOT NULL ORDER BY m.id LOOP
    IF NOT herald._next_in_order(producer => r.producer, ordering_key => r.ordering_key)
       OR NOT EXISTS (SELECT FROM herald.messages m WHERE m.id = r.id FOR UPDATE SKIP LOCKED) THEN
      INSERT INTO herald.ordering_rechecks (producer, ordering_key, message_id)
      VALUES (r.producer, r.ordering_key, r.id);
    END IF;
  END LOOP;
END
$$;

REVOKE ALL ON FUNCTION herald._release_after(bigint[]) FROM PUBLIC;
COMMENT ON FUNCTION herald._release_after(bigint[]) IS
  'Private: after messages with ordering keys finished, release the next message of each key, or note the key for reap_stale.';
