-- herald.status(id, idempotency_key) — what happened to one message, named by exactly
-- one of `id` or the `idempotency_key` it was enqueued with: one row, or none when it
-- is unknown, purged, or not the caller's. A producer sees only its own messages,
-- herald_admin any by id (herald._own_message); what it shows is herald._message_status
-- (state, times, failure class and code but never text, receipt, delivery outcome;
-- no payload, recipient or metadata). Errors: those of herald._own_message
-- (22V12, 22V09). Index: the primary key, messages_idempotency_key_idx. Locks: none.
-- SECURITY DEFINER for herald_producer (which has no table access).
CREATE OR REPLACE FUNCTION herald.status(id bigint DEFAULT NULL, idempotency_key text DEFAULT NULL)
RETURNS SETOF herald.message_status
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id bigint := herald._own_message(id => status.id, idempotency_key => status.idempotency_key);
BEGIN
  RETURN QUERY
  SELECT s.* FROM herald.messages m, herald._message_status(m) s WHERE m.id = v_id;
END
$$;

REVOKE ALL ON FUNCTION herald.status(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.status(bigint, text) TO herald_producer, herald_admin;
COMMENT ON FUNCTION herald.status(bigint, text) IS
  'What happened to one of the caller''s messages (by id or idempotency key): state, attempts, times, deadline, failure class and code, receipt, delivery outcome.';
