-- herald._settle_rechecks() — settle the ordering keys noted in herald.ordering_rechecks
-- (herald.reap_stale; claim_batch after it suppressed a message with a key): takes the
-- oldest notes, at most 10,000 per call (notes locked by a concurrent call are
-- skipped), and hands them to herald._release_after, which releases each key's next
-- message, or notes the key again while an enqueue still holds its finished message or
-- a row it needs is locked. Index: ordering_rechecks_pkey. Locks: the taken notes, and
-- those of herald._release_after.
CREATE OR REPLACE FUNCTION herald._settle_rechecks()
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
  v_producers text[];
  v_keys text[];
  v_message_ids bigint[];
BEGIN
  WITH taken AS (
    DELETE FROM herald.ordering_rechecks o
    WHERE o.id IN (SELECT x.id FROM herald.ordering_rechecks x ORDER BY x.id LIMIT 10000 FOR UPDATE SKIP LOCKED)
    RETURNING o.producer, o.ordering_key, o.message_id
  )
  SELECT array_agg(t.producer), array_agg(t.ordering_key), array_agg(t.message_id)
  INTO v_producers, v_keys, v_message_ids
  FROM taken t;
  IF v_keys IS NOT NULL THEN
    PERFORM herald._release_after(ids => v_message_ids, producers => v_producers, keys => v_keys);
  END IF;
END
$$;

REVOKE ALL ON FUNCTION herald._settle_rechecks() FROM PUBLIC;
COMMENT ON FUNCTION herald._settle_rechecks() IS
  'Private: release the next message of the ordering keys noted in herald.ordering_rechecks, once no enqueue holds their finished message.';
