-- herald._ready(channels, caps, n, first, from_priority, now) — lock and return up to n
-- ready messages for herald.claim_batch: queued, run_at <= now < expires_at, no earlier
-- message of its ordering_key queued or processing. Priority by priority from
-- from_priority (the lowest queued: claim_batch probes it) upwards; within a
-- priority, channel by channel in turns from channels[first] (then first + 1, …,
-- wrapping), each in (run_at, id) order; channels[i] gives at most caps[i] in all.
-- FOR UPDATE SKIP LOCKED: rows another claim holds are passed over. Each scan is one
-- range of messages_claim_idx (priority, hashtext(channel), run_at, id), so it reads
-- neither the channels not claimed nor scheduled messages: a probe per further queued
-- priority reached, a scan per channel in each. PL/pgSQL so its statements are planned
-- once per session (claim_batch's generic plan setting applies). Index:
-- messages_claim_idx, messages_ordering_key_idx. Locks: the returned rows.
CREATE OR REPLACE FUNCTION herald._ready(
  channels text[], caps integer[], n integer, first integer, from_priority integer, now timestamptz
)
RETURNS TABLE (id bigint, channel text, recipient text, priority smallint, run_at timestamptz)
LANGUAGE plpgsql
VOLATILE
AS $$
#variable_conflict use_column
DECLARE
  v_left integer := _ready.n;
  v_caps integer[] := _ready.caps;
  v_priority integer := _ready.from_priority;
  v_k integer := cardinality(_ready.channels);
  v_i integer;
  v_got integer;
BEGIN
  WHILE v_priority IS NOT NULL LOOP
    FOR t IN 0 .. v_k - 1 LOOP
      v_i := (_ready.first - 1 + t) % v_k + 1;
      CONTINUE WHEN v_caps[v_i] < 1;
      RETURN QUERY
      SELECT m.id, m.channel, m.recipient, m.priority, m.run_at
      FROM herald.messages m
      WHERE m.status = 'queued'
        AND m.priority = v_priority
        AND hashtext(m.channel) = hashtext(_ready.channels[v_i]) -- the index's stand-in for the name
        AND m.channel = _ready.channels[v_i]
        AND m.run_at <= _ready.now
        AND m.expires_at > _ready.now
        AND (m.ordering_key IS NULL OR NOT EXISTS (
              SELECT 1 FROM herald.messages e
              WHERE e.ordering_key = m.ordering_key
                AND e.id < m.id
                AND e.status IN ('queued', 'processing')))
      ORDER BY m.run_at, m.id
      LIMIT least(v_left, v_caps[v_i])
      FOR UPDATE SKIP LOCKED;
      GET DIAGNOSTICS v_got = ROW_COUNT;
      v_left := v_left - v_got;
      v_caps[v_i] := v_caps[v_i] - v_got;
      IF v_left = 0 THEN
        RETURN;
      END IF;
    END LOOP;
    v_priority := (SELECT min(m.priority) FROM herald.messages m WHERE m.status = 'queued' AND m.priority > v_priority);
  END LOOP;
END
$$;

REVOKE ALL ON FUNCTION herald._ready(text[], integer[], integer, integer, integer, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._ready(text[], integer[], integer, integer, integer, timestamptz) IS
  'Private: lock the next ready messages for claim_batch, priority by priority, channels in turns (FOR UPDATE SKIP LOCKED).';
