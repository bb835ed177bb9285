-- herald._settle_rechecks() — settle the ordering keys noted in herald.ordering_rechecks
-- (herald.reap_stale; claim_batch after it suppressed a message with a key): a note
-- whose finished message nobody holds any more (an enqueue that held it FOR KEY SHARE
-- has committed or rolled back, so what it stored is visible) is taken, and its key's
-- next message released (herald._next_in_order); a key that still cannot be told is
-- noted again. Oldest notes first, at most 10,000 per call; notes locked by a
-- concurrent call are skipped. Index: ordering_rechecks_pkey, messages_pkey. Locks:
-- the taken notes, the finished messages (FOR UPDATE), those of _next_in_order.
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
  FOR i IN 1 .. coalesce(cardinality(v_keys), 0) LOOP
    IF NOT herald._next_in_order(producer => v_producers[i], ordering_key => v_keys[i]) THEN
      INSERT INTO herald.ordering_rechecks (producer, ordering_key, message_id)
      VALUES (v_producers[i], v_keys[i], v_message_ids[i]);
    END IF;
  END LOOP;
END
$$;

REVOKE ALL ON FUNCTION herald._settle_rechecks() FROM PUBLIC;
COMMENT ON FUNCTION herald._settle_rechecks() IS
  'Private: release the next message of the ordering keys noted in herald.ordering_rechecks, once no enqueue holds their finished message.';
