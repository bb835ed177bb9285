-- herald.status(id, idempotency_key) — what happened to one message, named by exactly
-- one of `id` or the `idempotency_key` it was enqueued with: one row, or none when it
-- is unknown, purged, or not the caller's. A producer sees only its own messages,
-- herald_admin any by id (herald._own_message). Of a failure it shows the class and
-- the short code (SMTP reply, HTTP status, provider code), never the provider's or
-- receiver's text (that stays in messages.errors for workers and admins). No payload,
-- recipient or metadata. The delivery outcome the provider reported (delivered,
-- bounced, …) with its type, code and time. Errors: those of herald._own_message
-- (22V12, 22V09). Index: the primary key, messages_idempotency_key_idx. Locks: none.
-- SECURITY DEFINER for herald_producer (which has no table access).
CREATE OR REPLACE FUNCTION herald.status(id bigint DEFAULT NULL, idempotency_key text DEFAULT NULL)
RETURNS TABLE (
  message_id bigint,
  channel text,
  status text,
  attempts integer,
  max_attempts integer,
  run_at timestamptz,
  created_at timestamptz,
  finished_at timestamptz,
  expires_at timestamptz,
  last_error_class text,
  last_error_code text,
  provider_message_id text,
  outcome text,
  outcome_type text,
  outcome_code text,
  outcome_at timestamptz
)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id bigint := herald._own_message(id => status.id, idempotency_key => status.idempotency_key);
BEGIN
  RETURN QUERY
  SELECT m.id, m.channel, m.status, m.attempts, m.max_attempts, m.run_at, m.created_at,
         m.finished_at, m.expires_at, m.last_error_class, m.last_error_code, m.provider_message_id,
         m.outcome, m.outcome_type, m.outcome_code, m.outcome_at
  FROM herald.messages m
  WHERE m.id = v_id;
END
$$;

REVOKE ALL ON FUNCTION herald.status(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.status(bigint, text) TO herald_producer, herald_admin;
COMMENT ON FUNCTION herald.status(bigint, text) IS
  'What happened to one of the caller''s messages (by id or idempotency key): state, attempts, times, deadline, failure class and code, receipt, delivery outcome.';
