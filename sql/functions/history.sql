-- herald.history(id, idempotency_key) — what happened to one of the caller's messages,
-- event by event, oldest first: accepted (created_at); each failed attempt (its
-- time, attempt, class and code, from the last 20 kept in messages.errors; never the
-- provider's text); the end it came to (sent, dead, expired, cancelled, suppressed,
-- at finished_at); and the providers' reports after sent (delivered, bounced, …: the
-- type as class, the code; copy true for a cc or bcc's). The message is named as
-- herald.status names it (herald._own_message: a producer's own; an admin's any by
-- id); no row when it is unknown, purged or not the caller's. Errors: those of
-- herald._own_message (22V12, 22V09). Index: the primary key,
-- messages_idempotency_key_idx, delivery_events_message_idx. Locks: none.
-- SECURITY DEFINER for herald_producer (which has no table access).
CREATE OR REPLACE FUNCTION herald.history(id bigint DEFAULT NULL, idempotency_key text DEFAULT NULL)
RETURNS TABLE (at timestamptz, event text, attempt integer, class text, code text, copy boolean)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_id bigint := herald._own_message(id => history.id, idempotency_key => history.idempotency_key);
BEGIN
  RETURN QUERY
  SELECT h.at, h.event, h.attempt, h.class, h.code, h.copy
  FROM herald.messages m
  CROSS JOIN LATERAL (
    SELECT m.created_at AS at, 'accepted'::text AS event, NULL::integer AS attempt, NULL::text AS class,
           NULL::text AS code, false AS copy, 0 AS stage
    UNION ALL
    SELECT (e ->> 'at')::timestamptz, 'failed', (e ->> 'attempt')::integer, e ->> 'class', e ->> 'code', false, 1
    FROM jsonb_array_elements(m.errors) AS e
    UNION ALL
    SELECT m.finished_at, m.status, CASE WHEN m.status = 'sent' THEN m.attempts END, NULL, NULL, false, 2
    WHERE m.finished_at IS NOT NULL
    UNION ALL
    SELECT d.at, d.event, NULL, d.type, d.code,
           d.recipient IS NOT NULL AND lower(d.recipient) <> lower(m.recipient), 3
    FROM herald.delivery_events d
    WHERE d.message_id = m.id
  ) AS h
  WHERE m.id = v_id
  ORDER BY h.at, h.stage;
END
$$;

REVOKE ALL ON FUNCTION herald.history(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.history(bigint, text) TO herald_producer, herald_admin;
COMMENT ON FUNCTION herald.history(bigint, text) IS
  'What happened to one of the caller''s messages, event by event: accepted, each failed attempt (class and code), its end, the providers'' reports after sent.';
