-- herald._ready(channels, slots, caps, n, first, from_priority, now) — lock and return
-- up to n ready messages for herald.claim_batch: queued, run_at <= now < expires_at, no
-- earlier message of its producer's ordering_key pending (not finished). Priority by
-- priority from from_priority (the lowest queued) upwards; within a priority, channel
-- by channel in turns from channels[first] (wrapping), each in (run_at, id) order;
-- channels[i] gives at most caps[slots[i]], a cap its channels share (a rerouted
-- channel uses its fallback's). FOR NO KEY UPDATE SKIP LOCKED: rows another claim
-- holds are passed over. One statement walks up to the next priority where a channel
-- has a due message (a probe of messages_claim_idx per priority and per channel);
-- each such channel is then one range scan (priority, hashtext(channel), run_at <=
-- now). PL/pgSQL so its statements are planned once per session (claim_batch's
-- generic plan applies). Index: messages_claim_idx, messages_ordering_key_idx.
-- Locks: the returned rows, until the transaction ends.
CREATE OR REPLACE FUNCTION herald._ready(
  channels text[], slots integer[], caps integer[], n integer, first integer, from_priority integer, now timestamptz
)
RETURNS TABLE (id bigint, channel text, recipient text, priority smallint, run_at timestamptz)
LANGUAGE plpgsql
VOLATILE
AS $$
#variable_conflict use_column
DECLARE
  v_left integer := _ready.n;
  v_caps integer[] := _ready.caps;
  v_priority integer := _ready.from_priority - 1;
  v_due integer[];
  v_k integer := cardinality(_ready.channels);
  v_i integer;
  v_got integer;
BEGIN
  LOOP
    -- The next queued priority in which a channel with tokens left has a due message,
    -- and those channels: one statement walks the priorities in between (a priority
    -- that holds only scheduled messages costs a probe per channel, not a scan).
    WITH RECURSIVE walk (p, due) AS (
      SELECT v_priority, '{}'::integer[]
      UNION ALL
      SELECT n.p, ARRAY(SELECT c.i::integer
                        FROM unnest(_ready.channels, _ready.slots) WITH ORDINALITY AS c (name, slot, i)
                        WHERE v_caps[c.slot] >= 1 AND (
                          -- A scalar subquery, not EXISTS, and in the index's order: a
                          -- probe of messages_claim_idx per channel whatever the
                          -- statistics (else a hash join, or another index, may be chosen).
                          SELECT true FROM herald.messages m
                          WHERE m.status = 'queued' AND m.priority = n.p
                            AND hashtext(m.channel) = hashtext(c.name) AND m.channel = c.name
                            AND m.run_at <= _ready.now
                          ORDER BY m.run_at
                          LIMIT 1))
      FROM walk w
      CROSS JOIN LATERAL (SELECT min(m.priority) AS p FROM herald.messages m
                          WHERE m.status = 'queued' AND m.priority > w.p) AS n
      WHERE cardinality(w.due) = 0 AND n.p IS NOT NULL
    )
    SELECT w.p, w.due INTO v_priority, v_due FROM walk w WHERE cardinality(w.due) > 0 LIMIT 1;
    EXIT WHEN v_priority IS NULL;
    FOR t IN 0 .. v_k - 1 LOOP
      v_i := (_ready.first - 1 + t) % v_k + 1;
      CONTINUE WHEN NOT v_i = ANY (v_due);
      RETURN QUERY
      SELECT m.id, m.channel, m.recipient, m.priority, m.run_at
      FROM herald.messages m
      WHERE m.status = 'queued'
        AND m.priority = v_priority
        AND hashtext(m.channel) = hashtext(_ready.channels[v_i]) -- the index's stand-in for the name
        AND m.channel = _ready.channels[v_i]
        AND m.run_at <= _ready.now
        AND m.expires_at > _ready.now
        -- Held messages are not in the index; this check covers the few a race left
        -- queued behind an earlier pending message of their key.
        AND (m.ordering_key IS NULL OR NOT EXISTS (
              SELECT 1 FROM herald.messages e
              WHERE e.producer = m.producer
                AND e.ordering_key = m.ordering_key
                AND e.id < m.id
                AND e.finished_at IS NULL))
      ORDER BY m.run_at, m.id
      LIMIT least(v_left, v_caps[_ready.slots[v_i]])
      FOR NO KEY UPDATE SKIP LOCKED;
      GET DIAGNOSTICS v_got = ROW_COUNT;
      v_left := v_left - v_got;
      v_caps[_ready.slots[v_i]] := v_caps[_ready.slots[v_i]] - v_got;
      IF v_left = 0 THEN
        RETURN;
      END IF;
    END LOOP;
  END LOOP;
END
$$;

REVOKE ALL ON FUNCTION herald._ready(text[], integer[], integer[], integer, integer, integer, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._ready(text[], integer[], integer[], integer, integer, integer, timestamptz) IS
  'Private: lock the next ready messages for claim_batch, priority by priority, channels in turns (FOR NO KEY UPDATE SKIP LOCKED).';
