-- herald._plain_valid(item, kind, max_payload_bytes, now) — true when an
-- enqueue_batch element has the JSON shape enqueue_batch's element-by-element path
-- accepts (an object of known fields with strings and integers where they belong)
-- and no run_at (whose check needs a cast that can raise), and its values pass
-- herald._valid. enqueue_batch uses it to take its set-based fast path; any element
-- for which it is false sends the whole batch down the element-by-element path,
-- which raises the precise error (or, when this check was merely stricter, stores
-- the batch all the same). It must therefore never be true where that path would
-- raise. The integer casts come after the checks that make them safe (AND is
-- evaluated left to right). kind is NULL for an unknown channel. One SQL expression
-- without sub-selects, so the planner inlines it into enqueue_batch's check.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._plain_valid(item jsonb, kind text, max_payload_bytes integer, now timestamptz)
RETURNS boolean
LANGUAGE sql
STABLE
AS $$
  SELECT coalesce(
        jsonb_typeof(item) = 'object'
    -- no run_at, and no field but these (jsonb minus keys: no sub-select, so the
    -- planner can inline the whole function)
    AND (item - ARRAY['channel', 'recipient', 'payload', 'priority', 'idempotency_key',
                      'ordering_key', 'max_attempts', 'metadata']) = '{}'::jsonb
    AND jsonb_typeof(item -> 'channel') = 'string'
    AND jsonb_typeof(item -> 'recipient') = 'string'
    AND coalesce(jsonb_typeof(item -> 'priority'), 'null') IN ('null', 'number', 'string')
    AND (item ->> 'priority' IS NULL OR (item ->> 'priority') ~ '^-?[0-9]{1,9}$')
    AND coalesce(jsonb_typeof(item -> 'max_attempts'), 'null') IN ('null', 'number', 'string')
    AND (item ->> 'max_attempts' IS NULL OR (item ->> 'max_attempts') ~ '^-?[0-9]{1,9}$')
    AND coalesce(jsonb_typeof(item -> 'metadata'), 'null') IN ('null', 'object')
    AND coalesce(jsonb_typeof(item -> 'idempotency_key'), 'null') IN ('null', 'string')
    AND coalesce(jsonb_typeof(item -> 'ordering_key'), 'null') IN ('null', 'string')
    AND herald._valid(kind, max_payload_bytes, item ->> 'recipient', item -> 'payload', NULL,
                      (item ->> 'priority')::integer, (item ->> 'max_attempts')::integer,
                      nullif(item -> 'metadata', 'null'), item ->> 'idempotency_key',
                      item ->> 'ordering_key', now),
    false)
$$;

REVOKE ALL ON FUNCTION herald._plain_valid(jsonb, text, integer, timestamptz) FROM PUBLIC;
