-- herald.claim_batch(worker, batch_size, lease, channels, now) — lease the next ready
-- messages to `worker`: queued, run_at <= now < expires_at, channel in `channels` (NULL =
-- all), not paused nor in its quiet hours (herald._channel_quiet), within its rate (the
-- whole tokens of its herald.rate_buckets row) and producer_concurrency (or producers'
-- concurrency; all runners together), no earlier message of its producer's ordering_key
-- pending (such one is 'held'); and the due messages of a channel a runner paused whose
-- fallback is one of those: moved to it ('rerouted'). Lowest priority first; channels, and
-- producers within a channel, take turns (herald._ready). They become processing,
-- attempts + 1, lease_expires_at = now + lease (NULL: the channel's), under one new
-- lease_token (complete/fail/extend_lease's fencing token). Not handed out: a suppressed
-- recipient's (ends 'suppressed'; suppressed cc/bcc left out), one in its recipient's quiet
-- hours on a quiet_per_recipient channel (due at their end; NOTIFY herald_queue). Index:
-- claim_idx, ordering_key_idx, in_flight_idx, pkey (messages_). Locks: claimed rows, rate
-- buckets, bounded channels' advisory locks, to commit (call it in autocommit). Errors:
-- 22V12 worker, batch_size (1..10,000), lease (1 s..1 day). SECURITY DEFINER; generic plan.
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
  lease_expires_at timestamptz,
  expires_at timestamptz
)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan -- a custom plan was made at every claim (decisions.md)
AS $$
#variable_conflict use_column
DECLARE
  clock_ok boolean := herald._check_clock(now => claim_batch.now); -- first: a forged clock changes nothing
  v_token bigint;
  v_channels text[];
  v_kinds text[];
  v_as text[];
  v_leases interval[];
  v_slots integer[];
  v_paused text[];
  v_paused_kinds text[];
  v_paused_to text[];
  v_paused_why text[];
  v_rerouting boolean := false;
  v_recipient_quiet boolean; -- a channel's quiet hours are its recipients' own
  v_suppressing boolean := EXISTS (SELECT FROM herald.suppressions);
  v_limited boolean;
  v_rl_channels text[];
  v_avail double precision[];
  v_caps integer[];
  v_priority integer;
  v_bounded text[]; -- the served channels with a producer_concurrency, in hash order
  v_bounds integer[];
BEGIN
  IF claim_batch.worker IS NULL OR claim_batch.worker = '' OR length(claim_batch.worker) > 200 THEN
    PERFORM herald._reject('22V12', 'worker', 'must be a non-empty name of at most 200 characters');
  END IF;
  IF claim_batch.batch_size IS NULL OR claim_batch.batch_size NOT BETWEEN 1 AND 10000 THEN
    PERFORM herald._reject('22V12', 'batch_size', format('%s is outside 1..10000', claim_batch.batch_size));
  END IF;
  IF claim_batch.lease IS NOT NULL AND claim_batch.lease NOT BETWEEN interval '1 second' AND interval '1 day' THEN
    PERFORM herald._reject('22V12', 'lease', format('%s is outside 1 second..1 day', claim_batch.lease));
  END IF;

  -- The caller may be about to wait for a NOTIFY: producers notify from now on
  -- (herald._notify). Before the claim's snapshot, so a message that misses this
  -- claim finds the mark.
  PERFORM herald._listening('herald_queue');

  -- The channels served (open, asked for), and those a runner paused that have a
  -- fallback; neither in quiet hours (unless those are each recipient's: below).
  SELECT array_agg(c.name ORDER BY c.name) FILTER (WHERE c.serving),
         array_agg(c.kind ORDER BY c.name) FILTER (WHERE c.serving),
         array_agg(c.lease ORDER BY c.name) FILTER (WHERE c.serving),
         bool_or(c.rate IS NOT NULL) FILTER (WHERE c.serving),
         array_agg(c.name ORDER BY c.name) FILTER (WHERE NOT c.serving),
         array_agg(c.kind ORDER BY c.name) FILTER (WHERE NOT c.serving),
         array_agg(c.fallback ORDER BY c.name) FILTER (WHERE NOT c.serving),
         array_agg(c.paused_reason ORDER BY c.name) FILTER (WHERE NOT c.serving),
         bool_or(c.quiet_per_recipient),
         array_agg(c.name ORDER BY hashtext(c.name)) FILTER (WHERE c.serving AND c.producer_concurrency IS NOT NULL),
         array_agg(c.producer_concurrency ORDER BY hashtext(c.name)) FILTER (WHERE c.serving AND c.producer_concurrency IS NOT NULL)
  INTO v_channels, v_kinds, v_leases, v_limited, v_paused, v_paused_kinds, v_paused_to, v_paused_why, v_recipient_quiet,
       v_bounded, v_bounds
  FROM (SELECT c.name, c.kind, c.lease, c.rate, c.fallback, c.paused_reason, NOT c.paused AS serving, c.quiet_per_recipient,
               c.producer_concurrency
        FROM herald.channels c
        WHERE (NOT c.paused AND (claim_batch.channels IS NULL OR c.name = ANY (claim_batch.channels))
               OR c.paused AND c.paused_by = 'runner' AND c.fallback IS NOT NULL)
          AND NOT herald._channel_quiet(quiet_from => c.quiet_from, quiet_until => c.quiet_until, quiet_days => c.quiet_days,
                                        quiet_zone => c.quiet_zone, quiet_per_recipient => c.quiet_per_recipient,
                                        now => claim_batch.now)) AS c;
  IF v_channels IS NULL THEN
    RETURN;
  END IF;
  v_caps := array_fill(claim_batch.batch_size, ARRAY[cardinality(v_channels)]);

  IF v_limited THEN
    -- The buckets of the rate-limited channels: made on first use, locked in name
    -- order (no deadlock between claims of overlapping channels), refilled.
    INSERT INTO herald.rate_buckets (channel, tokens, refilled_at)
    SELECT c.name, coalesce(c.burst, greatest(1, ceil(c.rate)))::double precision, claim_batch.now
    FROM herald.channels c
    WHERE c.name = ANY (v_channels) AND c.rate IS NOT NULL
    ON CONFLICT (channel) DO NOTHING;
    PERFORM FROM herald.rate_buckets b WHERE b.channel = ANY (v_channels) ORDER BY b.channel FOR UPDATE;
    SELECT array_agg(b.channel), array_agg(least(coalesce(c.burst, greatest(1, ceil(c.rate))),
                      b.tokens + c.rate * greatest(0, extract(epoch FROM claim_batch.now - b.refilled_at))))
    INTO v_rl_channels, v_avail
    FROM herald.rate_buckets b
    JOIN herald.channels c ON c.name = b.channel
    WHERE b.channel = ANY (v_channels) AND c.rate IS NOT NULL;
    -- A rate-limited channel gives at most its whole tokens; one without a whole
    -- token is not claimed from this time.
    SELECT array_agg(x.name ORDER BY x.i), array_agg(x.kind ORDER BY x.i), array_agg(x.lease ORDER BY x.i),
           array_agg(coalesce(floor(v_avail[array_position(v_rl_channels, x.name)])::integer, claim_batch.batch_size) ORDER BY x.i)
    INTO v_channels, v_kinds, v_leases, v_caps
    FROM unnest(v_channels, v_kinds, v_leases) WITH ORDINALITY AS x (name, kind, lease, i)
    WHERE coalesce(v_avail[array_position(v_rl_channels, x.name)] >= 1, true);
    IF v_channels IS NULL THEN
      RETURN;
    END IF;
  END IF;
  v_as := v_channels;
  v_slots := ARRAY(SELECT generate_series(1, cardinality(v_channels)));
  IF v_paused IS NOT NULL THEN
    -- A paused channel is claimed as its fallback: the fallback's kind, lease and cap.
    SELECT v_channels || array_agg(p.name ORDER BY p.i), v_kinds || array_agg(p.kind ORDER BY p.i),
           v_leases || array_agg(v_leases[array_position(v_channels, p.fallback)] ORDER BY p.i),
           v_as || array_agg(p.fallback ORDER BY p.i),
           v_slots || array_agg(array_position(v_channels, p.fallback) ORDER BY p.i),
           count(*) > 0
    INTO v_channels, v_kinds, v_leases, v_as, v_slots, v_rerouting
    FROM unnest(v_paused, v_paused_kinds, v_paused_to) WITH ORDINALITY AS p (name, kind, fallback, i)
    WHERE p.fallback = ANY (v_channels);
  END IF;

  -- Nothing queued: no claim statement, no lease token. (The lowest queued priority,
  -- where _ready starts, is one probe of messages_claim_idx whatever the statistics.)
  v_priority := (SELECT min(m.priority) FROM herald.messages m WHERE m.status = 'queued');
  IF v_priority IS NULL THEN
    RETURN;
  END IF;
  v_token := nextval('herald.lease_token_seq');

  RETURN QUERY
  WITH ready AS (
    -- Channels, and producers within a channel, take turns being first within a
    -- priority, one claim after another (the token), so a backlog on one channel, or of
    -- one producer, does not hold back the others.
    -- Each id once (herald._ready may return one twice after a race).
    SELECT DISTINCT ON (r.id) r.id, r.channel, r.recipient
    FROM herald._ready(channels => v_channels, slots => v_slots, caps => v_caps, n => claim_batch.batch_size,
                       turn => v_token, from_priority => v_priority, bounded => v_bounded, bounds => v_bounds,
                       now => claim_batch.now) AS r
  ), barred AS (
    SELECT r.id
    FROM ready r
    WHERE v_suppressing
      AND EXISTS (SELECT FROM herald._suppression(kind => v_kinds[array_position(v_channels, r.channel)],
                                                  recipient => r.recipient, now => claim_batch.now))
  ), suppressed AS (
    UPDATE herald.messages m
    SET status = 'suppressed', finished_at = claim_batch.now
    WHERE m.id = ANY (ARRAY(SELECT b.id FROM barred b))
    RETURNING m.id, m.channel, m.recipient, m.ordering_key, m.producer
  ), noted AS (
    -- Their ordering keys' next messages: released below (herald._settle_rechecks).
    INSERT INTO herald.ordering_rechecks (producer, ordering_key, message_id)
    SELECT s.producer, s.ordering_key, s.id FROM suppressed s WHERE s.ordering_key IS NOT NULL
  ), logged AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
    SELECT 'suppressed', claim_batch.now, array_agg(s.id ORDER BY s.id), array_agg(s.channel ORDER BY s.id),
           array_agg(herald._key_hash(s.ordering_key, s.recipient) ORDER BY s.id)
    FROM suppressed s
    HAVING count(*) > 0
  ), quiet AS (
    -- On a channel whose quiet hours are its recipients' own, a message in them is due
    -- again at their end, its attempt not spent.
    UPDATE herald.messages m
    SET run_at = herald._quiet_end(quiet_from => c.quiet_from, quiet_until => c.quiet_until, quiet_days => c.quiet_days,
                                   quiet_zone => c.quiet_zone, at => claim_batch.now,
                                   recipient_zone => m.recipient_zone, zone_known => true)
    FROM ready r
    JOIN herald.channels c ON c.name = r.channel
    WHERE v_recipient_quiet AND m.id = r.id AND c.quiet_per_recipient
      AND herald._quiet_end(quiet_from => c.quiet_from, quiet_until => c.quiet_until, quiet_days => c.quiet_days,
                            quiet_zone => c.quiet_zone, at => claim_batch.now,
                            recipient_zone => m.recipient_zone, zone_known => true) > claim_batch.now
      AND NOT r.id = ANY (ARRAY(SELECT b.id FROM barred b))
    RETURNING m.id
  ), woke AS (
    -- Those left the batch short: the claimer's listener is woken to claim again.
    SELECT herald._notify(channels => ARRAY['herald_queue']) AS done FROM (SELECT FROM quiet LIMIT 1) AS moved
  ), claimed AS (
    UPDATE herald.messages m
    SET status = 'processing',
        channel = CASE WHEN v_rerouting THEN v_as[array_position(v_channels, m.channel)] ELSE m.channel END,
        attempts = m.attempts + 1,
        lease_token = v_token,
        leased_by = claim_batch.worker,
        lease_expires_at = claim_batch.now + coalesce(claim_batch.lease, v_leases[array_position(v_channels, m.channel)])
    -- By primary key, whatever the planner guesses for LIMIT batch_size (a parameter,
    -- which a generic plan takes for a tenth of the table: it then hashed the whole
    -- table for every claim).
    WHERE m.id = ANY (ARRAY(SELECT r.id FROM ready r EXCEPT ALL SELECT b.id FROM barred b EXCEPT ALL SELECT q.id FROM quiet q))
      AND (SELECT count(*) FROM woke) >= 0 -- (a CTE without data changes runs only when read)
    RETURNING m.id, m.channel, m.recipient, m.payload, m.metadata, m.attempts,
              m.lease_token, m.lease_expires_at, m.expires_at, m.priority, m.run_at, m.ordering_key
  ), rerouted AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes, details)
    SELECT 'rerouted', claim_batch.now, array_agg(c.id ORDER BY c.id), array_agg(c.channel ORDER BY c.id),
           array_agg(herald._key_hash(c.ordering_key, c.recipient) ORDER BY c.id),
           array_agg(jsonb_strip_nulls(jsonb_build_object('from', r.channel,
             'reason', left(v_paused_why[array_position(v_paused, r.channel)], 500))) ORDER BY c.id)
    FROM claimed c
    JOIN ready r ON r.id = c.id
    WHERE v_rerouting AND r.channel <> c.channel
    HAVING count(*) > 0
  ), spent AS (
    UPDATE herald.rate_buckets b
    SET tokens = v_avail[array_position(v_rl_channels, b.channel)] - k.n,
        refilled_at = greatest(b.refilled_at, claim_batch.now)
    FROM (SELECT c.channel, count(*) AS n FROM claimed c GROUP BY c.channel) AS k
    WHERE v_limited AND b.channel = k.channel AND b.channel = ANY (v_rl_channels)
  )
  SELECT c.id, c.channel, c.recipient,
         CASE WHEN v_suppressing AND (c.payload ? 'cc' OR c.payload ? 'bcc') AND v_kinds[array_position(v_channels, c.channel)] = 'email'
              THEN herald._unsuppressed_copies(payload => c.payload, now => claim_batch.now)
              ELSE c.payload
         END,
         c.metadata, c.attempts, c.lease_token, c.lease_expires_at, c.expires_at
  FROM claimed c
  ORDER BY c.priority, c.run_at, c.id;
  IF v_suppressing AND EXISTS (SELECT FROM herald.ordering_rechecks) THEN
    PERFORM herald._settle_rechecks();
  END IF;
END
$$;

REVOKE ALL ON FUNCTION herald.claim_batch(text, integer, interval, text[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.claim_batch(text, integer, interval, text[], timestamptz) TO herald_worker, herald_admin;
COMMENT ON FUNCTION herald.claim_batch(text, integer, interval, text[], timestamptz) IS
  'Lease the next ready messages to a worker (FOR NO KEY UPDATE SKIP LOCKED), with a new fencing token.';
