-- herald._settle_rechecks() — settle the ordering keys noted in herald.ordering_rechecks
-- (herald.reap_stale; claim_batch after it suppressed a message with a key): a note
-- whose finished message nobody holds any more (an enqueue that held it FOR KEY SHARE
-- has committed or rolled back, so what it stored is visible) is taken, and its key's
-- next message released (herald._release_after, which notes again a key it still
-- cannot tell). Oldest notes first, at most 10,000 per call; notes locked by a
-- concurrent call are skipped. Index: ordering_rechecks_pkey, messages_pkey. Locks:
-- the taken notes, the finished messages (FOR UPDATE), those of _release_after.
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
    WHERE o.id IN (SELECT x.id FROM herald.ordering_rechecks x
                   WHERE NOT EXISTS (SELECT FROM herald.messages m WHERE m.id = x.message_id)
                      OR EXISTS (SELECT FROM herald.messages m WHERE m.id = x.message_id FOR UPDATE SKIP LOCKED)
                   ORDER BY x.id LIMIT 10000 FOR UPDATE SKIP LOCKED)
    RETURNING o.producer, o.ordering_key, o.message_id
  )
  SELECT array_agg(k.producer), array_agg(k.ordering_key), array_agg(k.message_id)
  INTO v_producers, v_keys, v_message_ids
  FROM (SELECT t.producer, t.ordering_key, max(t.message_id) AS message_id FROM taken t GROUP BY 1, 2) AS k;
  IF v_keys IS NOT NULL THEN
    PERFORM herald._release_after(ids => v_message_ids, producers => v_producers, keys => v_keys);
  END IF;
END
$$;

REVOKE ALL ON FUNCTION herald._settle_rechecks() FROM PUBLIC;
COMMENT ON FUNCTION herald._settle_rechecks() IS
  'Private: release the next message of the ordering keys noted in herald.ordering_rechecks, once no enqueue holds their finished message.';
