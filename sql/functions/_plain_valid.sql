-- herald._plain_valid(item, kind, max_payload_bytes, now) — true when an
-- enqueue_batch element passes every rule of herald._validate and of the JSON type
-- checks of enqueue_batch, and has no run_at (whose check needs a cast that can
-- raise). enqueue_batch uses it to take its set-based fast path; any element for
-- which it is false sends the whole batch down the element-by-element path, which
-- raises the precise error (or, when this check was merely stricter, stores the batch
-- all the same). It must therefore never be true where that path would raise.
-- kind is NULL for an unknown channel. One SQL expression without sub-selects, so
-- the planner inlines it into enqueue_batch's check.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._plain_valid(item jsonb, kind text, max_payload_bytes integer, now timestamptz)
RETURNS boolean
LANGUAGE sql
STABLE
AS $$
  SELECT coalesce(
        jsonb_typeof(item) = 'object'
    AND kind IS NOT NULL
    -- no run_at, and no field but these (jsonb minus keys: no sub-select, so the
    -- planner can inline the whole function)
    AND (item - ARRAY['channel', 'recipient', 'payload', 'priority', 'idempotency_key',
                      'ordering_key', 'max_attempts', 'metadata']) = '{}'::jsonb
    AND jsonb_typeof(item -> 'channel') = 'string'
    AND jsonb_typeof(item -> 'recipient') = 'string'
    AND length(item ->> 'recipient') BETWEEN 1 AND 320
    AND CASE kind
          WHEN 'email' THEN length(item ->> 'recipient') <= 254
            AND (item ->> 'recipient') ~ '^[A-Za-z0-9.!#$%&''*+/=?^_`{|}~-]+@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$'
            AND (item ->> 'recipient') !~ '^\.|\.\.|\.@'
          WHEN 'sms' THEN (item ->> 'recipient') ~ '^\+[1-9][0-9]{6,14}$'
          WHEN 'webhook' THEN (item ->> 'recipient') ~ '^https?://[^\s/?#]+([/?#]\S*)?$'
          ELSE true
        END
    AND jsonb_typeof(item -> 'payload') = 'object'
    AND CASE kind
          WHEN 'email' THEN herald._nonempty_string(item -> 'payload' -> 'subject')
            AND (herald._nonempty_string(item -> 'payload' -> 'text')
              OR herald._nonempty_string(item -> 'payload' -> 'html')
              OR herald._nonempty_string(item -> 'payload' -> 'body'))
          WHEN 'sms' THEN herald._nonempty_string(item -> 'payload' -> 'text')
            OR herald._nonempty_string(item -> 'payload' -> 'body')
          ELSE true
        END
    AND pg_column_size(item -> 'payload') <= max_payload_bytes
    AND (coalesce(item -> 'priority', 'null') = 'null'
         OR (jsonb_typeof(item -> 'priority') IN ('number', 'string')
             AND (item ->> 'priority') ~ '^-?[0-9]{1,9}$'
             AND (item ->> 'priority')::integer BETWEEN -100 AND 100))
    AND (coalesce(item -> 'max_attempts', 'null') = 'null'
         OR (jsonb_typeof(item -> 'max_attempts') IN ('number', 'string')
             AND (item ->> 'max_attempts') ~ '^-?[0-9]{1,9}$'
             AND (item ->> 'max_attempts')::integer BETWEEN 1 AND 100))
    AND (coalesce(item -> 'metadata', 'null') = 'null'
         OR (jsonb_typeof(item -> 'metadata') = 'object' AND pg_column_size(item -> 'metadata') <= 8192))
    AND (coalesce(item -> 'idempotency_key', 'null') = 'null'
         OR (jsonb_typeof(item -> 'idempotency_key') = 'string' AND length(item ->> 'idempotency_key') BETWEEN 1 AND 255))
    AND (coalesce(item -> 'ordering_key', 'null') = 'null'
         OR (jsonb_typeof(item -> 'ordering_key') = 'string' AND length(item ->> 'ordering_key') BETWEEN 1 AND 255)),
    false)
$$;

REVOKE ALL ON FUNCTION herald._plain_valid(jsonb, text, integer, timestamptz) FROM PUBLIC;
