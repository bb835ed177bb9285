-- herald.status(id) — what happened to one message: one row, or none when the id is
-- unknown, purged, or not the caller's. A producer sees only its own messages
-- (herald._owner: its role, or the intake's named producer); herald_admin sees all
-- unless it names a producer. Of a failure it shows the class and the short code
-- (SMTP reply, HTTP status, provider code), never the provider's or receiver's text
-- (that stays in messages.errors for workers and admins). No payload, recipient or
-- metadata. The delivery outcome the provider reported (delivered, bounced, …) with its
-- type, code and time. (The id is not repeated: an output column may not share the argument's
-- name.) Errors: 22V12 id NULL. Index: the primary key. Locks: none.
-- SECURITY DEFINER for herald_producer (which has no table access).
CREATE OR REPLACE FUNCTION herald.status(id bigint)
RETURNS TABLE (
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
  v_owner text := herald._owner();
BEGIN
  IF status.id IS NULL THEN
    PERFORM herald._reject(code => '22V12', field => 'id', message => 'must not be NULL');
  END IF;
  RETURN QUERY
  SELECT m.channel, m.status, m.attempts, m.max_attempts, m.run_at, m.created_at,
         m.finished_at, m.expires_at, m.last_error_class, m.last_error_code, m.provider_message_id,
         m.outcome, m.outcome_type, m.outcome_code, m.outcome_at
  FROM herald.messages m
  WHERE m.id = status.id AND (v_owner IS NULL OR m.producer = v_owner);
END
$$;

REVOKE ALL ON FUNCTION herald.status(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.status(bigint) TO herald_producer, herald_admin;
COMMENT ON FUNCTION herald.status(bigint) IS
  'What happened to one of the caller''s messages: state, attempts, times, deadline, failure class and code, receipt, delivery outcome.';
