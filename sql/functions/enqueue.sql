-- herald.enqueue(channel, recipient, payload, …) — store one notification; returns its id.
-- Optional: run_at (NULL or past = now; future = scheduled, within a year), priority
-- (lower first: the producer's min_priority..100, herald.producers; NULL: 0, or
-- min_priority when above 0), idempotency_key (a repeat returns the first id and stores
-- nothing), ordering_key (same key: one at a time, in id order), max_attempts (1..100;
-- NULL = the channel's), metadata (object kept with the message, not sent), expires_at
-- (not sent by then: ends expired; capped at due time + the channel's ttl),
-- recipient_zone (the recipient's IANA time zone, for quiet_per_recipient channels),
-- now (a clock: herald_admin only). Keys are per producer (herald._producer).
-- Errors: 22V01–22V10, 22V17, 22V19 with the field in COLUMN (herald._validate), 22V12 now
-- NULL, 42501 priority more urgent than granted or now from a role below herald_admin;
-- nothing is stored. Runs in the caller's transaction; a concurrent enqueue of the same
-- key waits for it (herald._enqueue). A thin entry point over herald._enqueue.
-- SECURITY DEFINER for herald_producer. Locks: ROW EXCLUSIVE on herald.messages and
-- herald.log_statements.
CREATE OR REPLACE FUNCTION herald.enqueue(
  channel text,
  recipient text,
  payload jsonb,
  run_at timestamptz DEFAULT NULL,
  priority integer DEFAULT NULL,
  idempotency_key text DEFAULT NULL,
  ordering_key text DEFAULT NULL,
  max_attempts integer DEFAULT NULL,
  metadata jsonb DEFAULT NULL,
  expires_at timestamptz DEFAULT NULL,
  recipient_zone text DEFAULT NULL,
  now timestamptz DEFAULT now()
) RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  -- PL/pgSQL rather than SQL: a SQL function that is not inlined is planned at every call.
  RETURN (herald._enqueue(
            specs => ARRAY[ROW(channel, recipient, payload, run_at, priority, idempotency_key,
                               ordering_key, max_attempts, metadata, expires_at, recipient_zone)::herald.message_spec],
            now => now,
            single => true))[1];
END
$$;

REVOKE ALL ON FUNCTION herald.enqueue(text, text, jsonb, timestamptz, integer, text, text, integer, jsonb, timestamptz, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.enqueue(text, text, jsonb, timestamptz, integer, text, text, integer, jsonb, timestamptz, text, timestamptz)
  TO herald_producer, herald_admin;
COMMENT ON FUNCTION herald.enqueue(text, text, jsonb, timestamptz, integer, text, text, integer, jsonb, timestamptz, text, timestamptz) IS
  'Store one notification and return its id (idempotent with idempotency_key); errors 22V01-22V10, 22V17 and 22V19 name the field.';
