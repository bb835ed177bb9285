-- herald.fail(ids, lease_tokens, errors, error_classes, retry_at, now) — report failed
-- deliveries; SQL decides what happens next. Returns how many rows changed.
--
-- Per message (only rows still 'processing' under the same lease_token; see
-- herald.complete for stale tokens):
--   permanent                        -> 'dead' at once
--   transient, attempts < max        -> 'queued' at retry_at if given, else at
--                                       now + herald._backoff(attempts, channel base, cap)
--   transient, attempts >= max       -> 'dead'
--   rate_limited                     -> 'queued' at retry_at if given, else now + backoff;
--                                       the attempt is given back (attempts - 1): the
--                                       provider refused to try, so waiting out its
--                                       limit never dead-letters a message
-- retry_at earlier than now counts as now. Every failure is appended to the row's
-- error history (errors, last 20 kept) and sets last_error / last_error_class.
-- A message that goes 'dead' gets a 'dead' log event ({error_class, error,
-- attempts}) in the same statement; log consumers are woken, and so are runners when
-- a retry is due at once (herald._notify).
-- Index: the primary key, one probe per id (status is implied by the lease token;
-- see herald.complete). Locks: row locks on the changed rows; ROW EXCLUSIVE on
-- herald.log_statements.
-- Errors: HR012 for NULL or mismatched arrays, and error_classes holding anything but
-- transient, rate_limited, permanent. The single-id overload returns true when the
-- row changed. SECURITY DEFINER for herald_worker.
CREATE OR REPLACE FUNCTION herald.fail(
  ids bigint[],
  lease_tokens bigint[],
  errors text[],
  error_classes text[],
  retry_at timestamptz[] DEFAULT NULL,
  now timestamptz DEFAULT now()
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  changed integer;
  died boolean;
  ready boolean;
  bad text;
BEGIN
  PERFORM herald._check_arrays(ARRAY['ids', 'lease_tokens', 'errors', 'error_classes', 'retry_at'],
    ARRAY[cardinality(ids), cardinality(lease_tokens), cardinality(errors),
          cardinality(error_classes), cardinality(retry_at)], 4);
  SELECT c INTO bad FROM unnest(error_classes) AS c
  WHERE c IS NULL OR c NOT IN ('transient', 'rate_limited', 'permanent') LIMIT 1;
  IF FOUND THEN
    PERFORM herald._reject('HR012', 'error_classes',
      format('%s is not a failure class', coalesce(quote_literal(bad), 'NULL')),
      hint => 'use transient, rate_limited or permanent');
  END IF;

  WITH failed AS (
    UPDATE herald.messages m
    SET status = d.next_status,
        attempts = d.attempts,
        run_at = CASE WHEN d.next_status = 'queued' THEN d.next_run_at ELSE m.run_at END,
        finished_at = CASE WHEN d.next_status = 'dead' THEN fail.now END,
        lease_token = NULL,
        lease_expires_at = NULL,
        last_error = d.error,
        last_error_class = d.error_class,
        errors = herald._append_error(m.errors, jsonb_build_object(
                   'at', fail.now, 'attempt', m.attempts, 'class', d.error_class,
                   'error', d.error, 'worker', m.leased_by))
    FROM (
      SELECT u.id, u.lease_token, left(u.error, 2000) AS error, u.error_class,
             CASE
               WHEN u.error_class = 'permanent' THEN 'dead'
               WHEN u.error_class = 'transient' AND x.attempts >= x.max_attempts THEN 'dead'
               ELSE 'queued'
             END AS next_status,
             CASE WHEN u.error_class = 'rate_limited' THEN greatest(x.attempts - 1, 0) ELSE x.attempts END AS attempts,
             greatest(fail.now, coalesce(u.retry_at,
               fail.now + herald._backoff(x.attempts, c.backoff_base, c.backoff_max))) AS next_run_at
      FROM unnest(ids, lease_tokens, errors, error_classes, retry_at)
             AS u(id, lease_token, error, error_class, retry_at)
      JOIN herald.messages x ON x.id = u.id
      JOIN herald.channels c ON c.name = x.channel
    ) AS d
    WHERE m.id = d.id
      AND m.lease_token = d.lease_token -- a lease token exists only while processing (messages_lease_when_processing)
    RETURNING m.id, m.status, m.run_at, m.channel, m.recipient, m.ordering_key, m.last_error_class,
              m.last_error, m.attempts
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes, details)
    SELECT 'dead', fail.now, array_agg(f.id ORDER BY f.id), array_agg(f.channel ORDER BY f.id),
           array_agg(herald._key_hash(f.ordering_key, f.recipient) ORDER BY f.id),
           array_agg(herald._event_detail('dead', NULL, f.last_error_class, f.last_error, f.attempts) ORDER BY f.id)
    FROM failed f
    WHERE f.status = 'dead'
    HAVING count(*) > 0
  )
  SELECT count(*), bool_or(f.status = 'dead'), bool_or(f.status = 'queued' AND f.run_at <= fail.now)
  INTO changed, died, ready
  FROM failed f;
  IF died THEN
    PERFORM herald._notify(ARRAY['herald_log']);
  END IF;
  IF ready THEN
    PERFORM herald._notify(ARRAY['herald_queue']); -- a retry due at once
  END IF;
  RETURN changed;
END
$$;

CREATE OR REPLACE FUNCTION herald.fail(
  id bigint,
  lease_token bigint,
  error text,
  error_class text,
  retry_at timestamptz DEFAULT NULL,
  now timestamptz DEFAULT now()
) RETURNS boolean
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT herald.fail(ARRAY[id], ARRAY[lease_token], ARRAY[error], ARRAY[error_class], ARRAY[retry_at], now) = 1
$$;

REVOKE ALL ON FUNCTION herald.fail(bigint[], bigint[], text[], text[], timestamptz[], timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION herald.fail(bigint, bigint, text, text, timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.fail(bigint[], bigint[], text[], text[], timestamptz[], timestamptz) TO herald_worker, herald_admin;
GRANT EXECUTE ON FUNCTION herald.fail(bigint, bigint, text, text, timestamptz, timestamptz) TO herald_worker, herald_admin;
