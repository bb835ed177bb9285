-- herald.claim_batch(worker, batch_size, lease, channels, now) — lease the next ready
-- messages to `worker`; returns them in (priority, run_at, id) order.
--
-- Ready = status 'queued', run_at <= now, channel in `channels` (NULL = all) and not
-- paused, and — for a message with an ordering_key — no earlier message (lower id)
-- with the same key still queued or processing. Claimed rows become 'processing'
-- with attempts + 1, leased_by = worker, lease_expires_at = now + lease (NULL lease =
-- each channel's herald.channels.lease) and one new lease_token for this call: the
-- fencing token that complete/fail/extend_lease must present.
--
-- One statement: a CTE selects at most batch_size rows FOR UPDATE SKIP LOCKED (so
-- concurrent claimers never wait for, nor get, the same row), then UPDATE … RETURNING.
-- Nothing is deleted: a crash after the claim leaves the row 'processing' until
-- reap_stale sees the lease expire.
-- Index: messages_claim_idx (priority, run_at, id) WHERE status = 'queued', read in
-- order and stopped at the LIMIT; messages_ordering_key_idx for the ordering check;
-- the UPDATE finds the locked rows through messages_pkey (= ANY of their ids).
-- Sets the herald_queue notify clock to 0 (herald._listening) before it reads: a
-- caller that gets less than it asked for is about to wait, and the next producer
-- notifies (herald._notify).
-- Locks: row locks on the claimed rows until the caller's transaction ends (call it
-- in autocommit, or commit right away; never hold it open during a send).
-- Errors: HR012 worker (empty or over 200 characters), batch_size (outside 1..10000),
-- lease (outside 1 second..1 day).
-- SECURITY DEFINER for herald_worker.
CREATE OR REPLACE FUNCTION herald.claim_batch(
  worker text,
  batch_size integer DEFAULT 100,
  lease interval DEFAULT '30 seconds',
  channels text[] DEFAULT NULL,
  now timestamptz DEFAULT now()
) RETURNS TABLE (
  id bigint,
  channel text,
  recipient text,
  payload jsonb,
  metadata jsonb,
  attempt integer,
  lease_token bigint,
  lease_expires_at timestamptz
)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_token bigint;
  v_channels text[];
BEGIN
  IF claim_batch.worker IS NULL OR claim_batch.worker = '' OR length(claim_batch.worker) > 200 THEN
    PERFORM herald._reject('HR012', 'worker', 'must be a non-empty name of at most 200 characters');
  END IF;
  IF claim_batch.batch_size IS NULL OR claim_batch.batch_size NOT BETWEEN 1 AND 10000 THEN
    PERFORM herald._reject('HR012', 'batch_size', format('%s is outside 1..10000', claim_batch.batch_size));
  END IF;
  IF claim_batch.lease IS NOT NULL AND claim_batch.lease NOT BETWEEN interval '1 second' AND interval '1 day' THEN
    PERFORM herald._reject('HR012', 'lease', format('%s is outside 1 second..1 day', claim_batch.lease));
  END IF;

  -- The caller may be about to wait for a NOTIFY: producers notify from now on
  -- (herald._notify). Before the claim's snapshot, so a message that misses this
  -- claim finds the mark.
  PERFORM herald._listening('herald_queue');

  SELECT array_agg(c.name) INTO v_channels
  FROM herald.channels c
  WHERE NOT c.paused AND (claim_batch.channels IS NULL OR c.name = ANY (claim_batch.channels));
  IF v_channels IS NULL THEN
    RETURN;
  END IF;

  v_token := nextval('herald.lease_token_seq');

  RETURN QUERY
  WITH ready AS (
    SELECT m.id
    FROM herald.messages m
    WHERE m.status = 'queued'
      AND m.run_at <= claim_batch.now
      AND m.channel = ANY (v_channels)
      AND (m.ordering_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM herald.messages e
            WHERE e.ordering_key = m.ordering_key
              AND e.id < m.id
              AND e.status IN ('queued', 'processing')))
    ORDER BY m.priority, m.run_at, m.id
    LIMIT claim_batch.batch_size
    FOR UPDATE SKIP LOCKED
  ), claimed AS (
    UPDATE herald.messages m
    SET status = 'processing',
        attempts = m.attempts + 1,
        lease_token = v_token,
        leased_by = claim_batch.worker,
        lease_expires_at = claim_batch.now + coalesce(claim_batch.lease,
          (SELECT c.lease FROM herald.channels c WHERE c.name = m.channel))
    -- By primary key, whatever the planner guesses for LIMIT batch_size (a parameter,
    -- which a generic plan takes for a tenth of the table: it then hashed the whole
    -- table for every claim).
    WHERE m.id = ANY (ARRAY(SELECT r.id FROM ready r))
    RETURNING m.id, m.channel, m.recipient, m.payload, m.metadata, m.attempts,
              m.lease_token, m.lease_expires_at, m.priority, m.run_at
  )
  SELECT c.id, c.channel, c.recipient, c.payload, c.metadata, c.attempts,
         c.lease_token, c.lease_expires_at
  FROM claimed c
  ORDER BY c.priority, c.run_at, c.id;
END
$$;

REVOKE ALL ON FUNCTION herald.claim_batch(text, integer, interval, text[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.claim_batch(text, integer, interval, text[], timestamptz) TO herald_worker, herald_admin;
