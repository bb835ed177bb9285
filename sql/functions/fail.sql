-- herald.fail(ids, lease_tokens, errors, error_classes, retry_at, error_codes, now) —
-- report failed deliveries (rows still processing under that lease_token); SQL
-- decides what follows; returns how many changed (the single-id overload: whether).
--   a provider reported taking it meanwhile (record_delivery_events stored its id): sent.
--   permanent: dead; a code ruling the address out (_suppression_reason) suppresses it.
--   transient: queued at retry_at (else now + herald._backoff), dead at max attempts.
--   rate_limited / configuration / quota: queued at retry_at (else now + backoff / now /
--   now + the channel's quota_wait), the attempt given back; configuration also pauses
--   the channel (by runner, the error), quota until then; with a fallback, due at once
--   while a runner pauses it (claim_batch reroutes).
-- Due at or after expires_at: expired. Dead, expired: a log event. error_codes: what
-- producers see; errors: the text (2,000 chars), the last 20 kept. Index: pkey. Locks:
-- the changed rows; ROW EXCLUSIVE on log_statements, suppressions; a configuration or
-- quota failure's channel. Errors: 22V12 NULL or mismatched arrays, an unknown class, a
-- code over 64. SECURITY DEFINER for workers.
CREATE OR REPLACE FUNCTION herald.fail(
  ids bigint[],
  lease_tokens bigint[],
  errors text[],
  error_classes text[],
  retry_at timestamptz[] DEFAULT NULL,
  error_codes text[] DEFAULT NULL,
  now timestamptz DEFAULT now()
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => fail.now); -- first: a forged clock changes nothing
  changed integer;
  v_ordered bigint[];
  v_channels text[];
  v_reasons text[];
  v_untils timestamptz[];
  died boolean;
  ready boolean;
  bad text;
  v_taken bigint[];
  v_taken_tokens bigint[];
  taken integer := 0;
BEGIN
  PERFORM herald._check_arrays(ARRAY['ids', 'lease_tokens', 'errors', 'error_classes', 'retry_at', 'error_codes'],
    ARRAY[cardinality(ids), cardinality(lease_tokens), cardinality(errors),
          cardinality(error_classes), cardinality(retry_at), cardinality(error_codes)], 4);
  SELECT c INTO bad FROM unnest(error_classes) AS c
  WHERE c IS NULL OR c NOT IN ('transient', 'rate_limited', 'quota', 'configuration', 'permanent') LIMIT 1;
  IF FOUND THEN
    PERFORM herald._reject('22V12', 'error_classes',
      format('%s is not a failure class', coalesce(quote_literal(bad), 'NULL')),
      hint => 'use transient, rate_limited, quota, configuration or permanent');
  END IF;
  IF EXISTS (SELECT FROM unnest(error_codes) AS c WHERE length(c) > 64) THEN
    PERFORM herald._reject('22V12', 'error_codes', 'a code is over 64 characters');
  END IF;
  -- A provider reported taking the message while this attempt was out (its id stored
  -- by herald.record_delivery_events): it was sent, whatever this report says.
  SELECT array_agg(m.id) FILTER (WHERE m.provider_message_id IS NOT NULL), -- not a scan condition: a probe per id
         array_agg(m.lease_token) FILTER (WHERE m.provider_message_id IS NOT NULL)
  INTO v_taken, v_taken_tokens
  FROM unnest(ids, lease_tokens) AS u(id, lease_token)
  JOIN herald.messages m ON m.id = u.id AND m.lease_token = u.lease_token;
  IF v_taken IS NOT NULL THEN
    taken := herald._mark_sent(ids => v_taken, lease_tokens => v_taken_tokens, provider_message_ids => NULL, now => fail.now);
  END IF;

  WITH failed AS (
    UPDATE herald.messages m
    SET status = d.next_status,
        attempts = d.attempts,
        run_at = CASE WHEN d.next_status = 'queued' THEN d.due_at ELSE m.run_at END,
        finished_at = CASE WHEN d.next_status IN ('dead', 'expired') THEN fail.now END,
        lease_token = NULL,
        lease_expires_at = NULL,
        last_error = d.error,
        last_error_class = d.error_class,
        last_error_code = d.error_code,
        errors = herald._append_error(m.errors, jsonb_build_object(
                   'at', fail.now, 'attempt', m.attempts, 'class', d.error_class,
                   'code', d.error_code, 'error', d.error, 'worker', m.leased_by))
    FROM (
      SELECT u.id, u.lease_token, left(u.error, 2000) AS error, u.error_class, u.error_code,
             CASE
               WHEN u.error_class = 'permanent' THEN 'dead'
               WHEN u.error_class = 'transient' AND x.attempts >= x.max_attempts THEN 'dead'
               WHEN w.due_at >= x.expires_at THEN 'expired'
               ELSE 'queued'
             END AS next_status,
             CASE WHEN u.error_class IN ('rate_limited', 'quota', 'configuration') THEN greatest(x.attempts - 1, 0)
                  ELSE x.attempts END AS attempts,
             n.next_run_at, w.due_at
      FROM unnest(ids, lease_tokens, errors, error_classes, retry_at, error_codes)
             AS u(id, lease_token, error, error_class, retry_at, error_code)
      JOIN herald.messages x ON x.id = u.id
      JOIN herald.channels c ON c.name = x.channel
      CROSS JOIN LATERAL (SELECT greatest(fail.now, coalesce(u.retry_at, CASE
               WHEN u.error_class = 'configuration' THEN fail.now
               WHEN u.error_class = 'quota' THEN fail.now + c.quota_wait
               ELSE fail.now + herald._backoff(x.attempts, c.backoff_base, c.backoff_max) END)) AS next_run_at) AS n
      -- Waiting on the channel's pause (its quota, its setup, its provider down), a
      -- message of a channel with a fallback is due at once: the fallback sends it.
      CROSS JOIN LATERAL (SELECT CASE WHEN c.fallback IS NOT NULL
                                        AND (u.error_class IN ('quota', 'configuration')
                                             OR u.error_class = 'rate_limited' AND c.paused AND c.paused_by = 'runner')
                                   THEN fail.now ELSE n.next_run_at END AS due_at) AS w
    ) AS d
    WHERE m.id = d.id
      AND m.lease_token = d.lease_token -- a lease token exists only while processing (messages_lease_when_processing)
      AND m.provider_message_id IS NULL -- one a report stored since: left to reap_stale, which marks it sent
    RETURNING m.id, m.status, m.run_at, m.channel, m.recipient, m.ordering_key, m.last_error_class,
              m.last_error, m.last_error_code, m.attempts, d.next_run_at
  ), refused AS ( -- a refusal that rules the address out (herald._suppression_reason) stops future sends
    -- (two of one address in a call: the second is a conflict, skipped)
    INSERT INTO herald.suppressions (kind, recipient, reason, source, created_at)
    SELECT c.kind, herald._suppression_key(kind => c.kind, recipient => f.recipient), r.reason, 'send', fail.now
    FROM failed f
    JOIN herald.channels c ON c.name = f.channel
    CROSS JOIN LATERAL (SELECT herald._suppression_reason(kind => c.kind, event => 'undelivered', type => NULL,
                                                          code => f.last_error_code) AS reason) AS r
    WHERE f.status = 'dead' AND f.last_error_class = 'permanent' AND r.reason IS NOT NULL
    ON CONFLICT ON CONSTRAINT suppressions_pkey DO NOTHING
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes, details)
    SELECT f.status, fail.now, array_agg(f.id ORDER BY f.id), array_agg(f.channel ORDER BY f.id),
           array_agg(herald._key_hash(f.ordering_key, f.recipient) ORDER BY f.id),
           array_agg(herald._event_detail(f.status, NULL, f.last_error_class, f.last_error, f.attempts) ORDER BY f.id)
    FROM failed f
    WHERE f.status IN ('dead', 'expired')
    GROUP BY f.status
  )
  SELECT t.n, t.died, t.ready, t.ordered, p.channels, p.reasons, p.untils
  INTO changed, died, ready, v_ordered, v_channels, v_reasons, v_untils
  FROM (SELECT count(*) AS n, bool_or(f.status IN ('dead', 'expired')) AS died,
               bool_or(f.status = 'queued' AND f.run_at <= fail.now) AS ready,
               array_agg(f.id) FILTER (WHERE f.ordering_key IS NOT NULL AND f.status <> 'queued') AS ordered
        FROM failed f) AS t,
       (SELECT array_agg(x.channel ORDER BY x.channel) AS channels, array_agg(x.last_error ORDER BY x.channel) AS reasons,
               array_agg(x.until ORDER BY x.channel) AS untils
        FROM (SELECT DISTINCT ON (g.channel) g.channel, g.last_error, -- a configuration failure's pause has no end
                     CASE WHEN g.last_error_class = 'quota'
                          THEN max(g.next_run_at) OVER (PARTITION BY g.channel) END AS until
              FROM failed g WHERE g.last_error_class = 'configuration' OR (g.last_error_class = 'quota' AND g.next_run_at > fail.now)
              ORDER BY g.channel, g.last_error_class, g.id) AS x) AS p; -- 'configuration' sorts first
  IF v_ordered IS NOT NULL THEN
    PERFORM herald._release_after(ids => v_ordered);
  END IF;
  IF v_channels IS NOT NULL THEN -- the runner's setup is wrong, or the account's quota spent: its channels stop for every runner
    PERFORM herald.pause_channel(channel => u.channel, reason => u.reason, by => 'runner', until => u.until, now => fail.now)
    FROM unnest(v_channels, v_reasons, v_untils) AS u (channel, reason, until);
  END IF;
  IF died THEN
    PERFORM herald._notify(ARRAY['herald_log']);
  END IF;
  IF ready THEN
    PERFORM herald._notify(ARRAY['herald_queue']); -- a retry due at once
  END IF;
  RETURN changed + taken;
END
$$;

CREATE OR REPLACE FUNCTION herald.fail(
  id bigint,
  lease_token bigint,
  error text,
  error_class text,
  retry_at timestamptz DEFAULT NULL,
  error_code text DEFAULT NULL,
  now timestamptz DEFAULT now()
) RETURNS boolean
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT herald._check_not_null(ARRAY['id', 'lease_token', 'error', 'error_class'],
    ARRAY[id IS NOT NULL, lease_token IS NOT NULL, error IS NOT NULL, error_class IS NOT NULL]);
  SELECT herald.fail(ids => ARRAY[id], lease_tokens => ARRAY[lease_token], errors => ARRAY[error],
                     error_classes => ARRAY[error_class], retry_at => ARRAY[retry_at],
                     error_codes => ARRAY[error_code], now => now) = 1
$$;

REVOKE ALL ON FUNCTION herald.fail(bigint[], bigint[], text[], text[], timestamptz[], text[], timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION herald.fail(bigint, bigint, text, text, timestamptz, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.fail(bigint[], bigint[], text[], text[], timestamptz[], text[], timestamptz) TO herald_worker, herald_admin;
GRANT EXECUTE ON FUNCTION herald.fail(bigint, bigint, text, text, timestamptz, text, timestamptz) TO herald_worker, herald_admin;
COMMENT ON FUNCTION herald.fail(bigint[], bigint[], text[], text[], timestamptz[], text[], timestamptz) IS
  'Report failed deliveries; SQL decides retry, wait or dead. Returns how many changed.';
COMMENT ON FUNCTION herald.fail(bigint, bigint, text, text, timestamptz, text, timestamptz) IS
  'Report one failed delivery; SQL decides retry, wait or dead.';
