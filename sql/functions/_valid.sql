-- herald._valid(kind, max_payload_bytes, recipient, payload, run_at, priority,
-- max_attempts, metadata, idempotency_key, ordering_key, now) — true when a message
-- passes every rule of herald._validate for a channel of that kind and payload
-- limit (kind NULL = unknown channel: false). The set-based twin of _validate: the
-- enqueue functions check with it in the same statement that inserts, and call
-- _validate, which names the field and raises, only when it is false. It must
-- therefore never be false where _validate passes (a test compares them).
-- One SQL expression without sub-selects, so the planner inlines it.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._valid(
  kind text,
  max_payload_bytes integer,
  recipient text,
  payload jsonb,
  run_at timestamptz,
  priority integer,
  max_attempts integer,
  metadata jsonb,
  idempotency_key text,
  ordering_key text,
  now timestamptz
) RETURNS boolean
LANGUAGE sql
STABLE
AS $$
  SELECT coalesce(
        kind IS NOT NULL
    AND length(recipient) BETWEEN 1 AND 320
    AND CASE kind
          WHEN 'email' THEN herald._email_address(recipient)
          WHEN 'sms' THEN recipient ~ '^\+[1-9][0-9]{6,14}$'
          WHEN 'webhook' THEN recipient ~ '^https?://[^\s/?#]+([/?#]\S*)?$'
          ELSE true
        END
    AND jsonb_typeof(payload) = 'object'
    AND CASE kind
          WHEN 'email' THEN herald._nonempty_string(payload, 'subject')
            AND (herald._nonempty_string(payload, 'text')
              OR herald._nonempty_string(payload, 'html')
              OR herald._nonempty_string(payload, 'body'))
          WHEN 'sms' THEN herald._nonempty_string(payload, 'text')
            OR herald._nonempty_string(payload, 'body')
          ELSE true
        END
    AND pg_column_size(payload) <= max_payload_bytes
    AND (run_at IS NULL OR run_at BETWEEN now - interval '1 year' AND now + interval '1 year')
    AND (priority IS NULL OR priority BETWEEN -100 AND 100)
    AND (max_attempts IS NULL OR max_attempts BETWEEN 1 AND 100)
    AND (metadata IS NULL OR (jsonb_typeof(metadata) = 'object' AND pg_column_size(metadata) <= 8192))
    AND (idempotency_key IS NULL OR length(idempotency_key) BETWEEN 1 AND 255)
    AND (ordering_key IS NULL OR length(ordering_key) BETWEEN 1 AND 255),
    false)
$$;

REVOKE ALL ON FUNCTION herald._valid(text, integer, text, jsonb, timestamptz, integer, integer, jsonb, text, text, timestamptz) FROM PUBLIC;
