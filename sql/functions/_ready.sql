-- herald._ready(at_priority, channels, n, now) — lock and return up to n ready messages of
-- one priority for herald.claim_batch, in (run_at, id) order: queued, run_at <= now <
-- expires_at, channel in `channels`, no earlier message of its ordering_key queued or
-- processing. FOR UPDATE SKIP LOCKED: rows another claim holds are passed over.
-- With the priority fixed, `run_at <= now` bounds the scan of messages_claim_idx: it
-- ends at the priority's first scheduled message instead of reading the scheduled
-- ones. PL/pgSQL so that its statement is planned once per session (claim_batch's
-- generic plan setting applies). Index: messages_claim_idx (priority = , run_at <=),
-- messages_ordering_key_idx. Locks: the returned rows, until the transaction ends.
CREATE OR REPLACE FUNCTION herald._ready(at_priority integer, channels text[], n integer, now timestamptz)
RETURNS TABLE (id bigint, channel text, recipient text, priority smallint, run_at timestamptz)
LANGUAGE plpgsql
VOLATILE
AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT m.id, m.channel, m.recipient, m.priority, m.run_at
  FROM herald.messages m
  WHERE m.status = 'queued'
    AND m.priority = _ready.at_priority
    AND m.run_at <= _ready.now
    AND m.expires_at > _ready.now
    AND m.channel = ANY (_ready.channels)
    AND (m.ordering_key IS NULL OR NOT EXISTS (
          SELECT 1 FROM herald.messages e
          WHERE e.ordering_key = m.ordering_key
            AND e.id < m.id
            AND e.status IN ('queued', 'processing')))
  ORDER BY m.run_at, m.id
  LIMIT _ready.n
  FOR UPDATE SKIP LOCKED;
END
$$;

REVOKE ALL ON FUNCTION herald._ready(integer, text[], integer, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._ready(integer, text[], integer, timestamptz) IS
  'Private: lock the next ready messages of one priority for claim_batch (FOR UPDATE SKIP LOCKED).';
