-- herald._release_after(ids, producers, keys) — after messages with ordering keys
-- finished (ids; their producers and keys, looked up when NULL): make each key's first
-- pending message (lowest id, queued, held or processing) 'queued' if it is 'held', so
-- claims take it, and wake the runners. Called by complete, fail, cancel and
-- reap_stale after their statement, and by herald._settle_rechecks. A key is noted in
-- herald.ordering_rechecks, for reap_stale, when its first pending message is locked
-- by a concurrent claim or exit (it may be finishing too), or when an enqueue still in
-- progress holds the finished message FOR KEY SHARE (it stored a message held behind
-- it, which this transaction cannot see). Set-based, one statement for all keys; never
-- waits (SKIP LOCKED), so exits of one key cannot deadlock. Generic plan. Index:
-- messages_pkey, messages_ordering_key_idx. Locks: the finished rows (FOR UPDATE), the
-- first pending messages (FOR SHARE, or their update), until the transaction ends.
CREATE OR REPLACE FUNCTION herald._release_after(ids bigint[], producers text[] DEFAULT NULL, keys text[] DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_released boolean;
BEGIN
  IF _release_after.producers IS NULL THEN
    SELECT array_agg(m.producer), array_agg(m.ordering_key), array_agg(m.id)
    INTO _release_after.producers, _release_after.keys, _release_after.ids
    FROM herald.messages m
    WHERE m.id = ANY (_release_after.ids) AND m.ordering_key IS NOT NULL;
  END IF;
  WITH finished AS (
    SELECT f.producer, f.ordering_key, f.id
    FROM unnest(_release_after.producers, _release_after.keys, _release_after.ids) AS f (producer, ordering_key, id)
  ), watched AS ( -- held FOR KEY SHARE by an enqueue in progress
    SELECT f.* FROM finished f
    WHERE EXISTS (SELECT FROM herald.messages m WHERE m.id = f.id)
      AND NOT EXISTS (SELECT FROM herald.messages m WHERE m.id = f.id FOR UPDATE SKIP LOCKED)
  ), firsts AS (
    SELECT DISTINCT ON (f.producer, f.ordering_key) f.producer, f.ordering_key, f.id AS finished_id, n.id, n.status
    FROM finished f
    CROSS JOIN LATERAL (SELECT e.id, e.status FROM herald.messages e
                        WHERE e.producer = f.producer AND e.ordering_key = f.ordering_key
                          AND e.finished_at IS NULL
                        ORDER BY e.id LIMIT 1) AS n
    ORDER BY f.producer, f.ordering_key, f.id DESC
  ), released AS (
    UPDATE herald.messages m
    SET status = 'queued'
    WHERE m.id IN (SELECT e.id FROM herald.messages e
                   WHERE e.id IN (SELECT r.id FROM firsts r WHERE r.status = 'held') AND e.status = 'held'
                   FOR NO KEY UPDATE SKIP LOCKED)
    RETURNING m.id
  ), steady AS ( -- the first is queued or processing already, and not finishing right now
    SELECT e.id FROM herald.messages e
    WHERE e.id IN (SELECT r.id FROM firsts r WHERE r.status <> 'held') AND e.status IN ('queued', 'processing')
    FOR SHARE SKIP LOCKED
  ), noted AS (
    INSERT INTO herald.ordering_rechecks (producer, ordering_key, message_id)
    SELECT w.producer, w.ordering_key, w.id FROM watched w
    UNION
    SELECT r.producer, r.ordering_key, r.finished_id FROM firsts r
    WHERE r.id NOT IN (SELECT x.id FROM released x UNION ALL SELECT y.id FROM steady y)
  )
  SELECT EXISTS (SELECT FROM released) INTO v_released;
  IF v_released THEN
    PERFORM herald._notify(ARRAY['herald_queue']);
  END IF;
END
$$;

REVOKE ALL ON FUNCTION herald._release_after(bigint[], text[], text[]) FROM PUBLIC;
COMMENT ON FUNCTION herald._release_after(bigint[], text[], text[]) IS
  'Private: after messages with ordering keys finished, release the next message of each key, or note the key for reap_stale.';
