-- herald._next_in_order(producer, ordering_key) — after a message of the key finished:
-- release its first pending message (lowest id, queued, held or processing) if it is
-- 'held' (to 'queued', so claims can take it), and wake the runners. Returns false when it cannot tell now: the
-- first pending message is locked by a concurrent claim or exit (SKIP LOCKED, so exits
-- of one key never wait for each other or deadlock); the caller notes the key in
-- herald.ordering_rechecks for herald.reap_stale. Index: messages_ordering_key_idx.
-- Locks: the first pending message (FOR SHARE, or FOR NO KEY UPDATE to release it),
-- until the transaction ends; neither conflicts with an enqueue's FOR KEY SHARE.
CREATE OR REPLACE FUNCTION herald._next_in_order(producer text, ordering_key text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
  v_id bigint;
  v_status text;
BEGIN
  SELECT e.id, e.status INTO v_id, v_status
  FROM herald.messages e
  WHERE e.producer = _next_in_order.producer AND e.ordering_key = _next_in_order.ordering_key
    AND e.status IN ('queued', 'held', 'processing')
  ORDER BY e.id
  LIMIT 1;
  IF v_id IS NULL THEN
    RETURN true; -- nothing pending
  END IF;
  IF v_status <> 'held' THEN
    -- The head already, unless a concurrent transaction is finishing it right now.
    PERFORM FROM herald.messages e
    WHERE e.id = v_id AND e.status IN ('queued', 'processing')
    FOR SHARE SKIP LOCKED;
    RETURN FOUND;
  END IF;
  UPDATE herald.messages m
  SET status = 'queued'
  WHERE m.id = (SELECT e.id FROM herald.messages e
                WHERE e.id = v_id AND e.status = 'held'
                FOR NO KEY UPDATE SKIP LOCKED);
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM herald._notify(ARRAY['herald_queue']);
  RETURN true;
END
$$;

REVOKE ALL ON FUNCTION herald._next_in_order(text, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._next_in_order(text, text) IS
  'Private: release the first pending message of a producer''s ordering key if it is held; false when locked (recheck later).';
