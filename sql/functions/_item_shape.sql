-- herald._item_shape(item) — the JSON shape of one enqueue_batch element, as a
-- number, so that one max() over a batch says which path it takes:
--   0  an object with exactly channel, recipient and payload, channel and recipient
--      JSON strings (payload of any type: herald._valid judges it);
--   1  an object with those and some of the optional fields priority,
--      idempotency_key, ordering_key, max_attempts and metadata (null or absent
--      allowed), each of the JSON type enqueue_batch's element-by-element path
--      accepts (priority and max_attempts numbers or strings of an integer's digits,
--      the keys strings, metadata an object), and no other field — not run_at,
--      whose check needs a cast that can raise;
--   2  anything else.
-- enqueue_batch takes the elements of a batch whose shapes are all 0 or 1 out into
-- parallel arrays (every cast then succeeds) for herald.enqueue_many, which checks the
-- values; one element of shape 2 sends the batch down the element-by-element path,
-- which raises the precise error (or, were this check merely stricter, stores the
-- batch all the same). It must therefore never give 0 or 1 where that path would
-- raise a shape error. A field added to the message goes into the list of shape 1
-- and into enqueue_batch's second pass, or the fast path would drop it.
-- A CASE, so the tests run in order and stop at the first that settles the shape:
-- the object test before `-` (which raises on a scalar), the integer casts' digit
-- tests in shape 1 only. The first test, the object's and its two strings', is one
-- SQL/JSON path (release 8): in
-- strict mode `@.channel` on an array or a scalar, or a missing key, is an error
-- (the filter is false, the path finds nothing), and `starts with ""` holds for
-- every string and for nothing else (a number, true, null, an array or an object
-- is not comparable). It replaced three jsonb_typeof tests (the element, and the
-- values -> took out): 4,300 instructions an element against 6,800 (callgrind).
-- One SQL expression without sub-selects, so the planner inlines it into
-- enqueue_batch's pass.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._item_shape(item jsonb)
RETURNS integer
LANGUAGE sql
STABLE
AS $$
  SELECT CASE
           WHEN (item @? 'strict $ ? (@.channel starts with "" && @.recipient starts with "")') IS NOT TRUE THEN 2
           WHEN (item - '{channel,recipient,payload}'::text[]) = '{}' THEN 0
           WHEN (item - ARRAY['channel', 'recipient', 'payload', 'priority', 'idempotency_key',
                              'ordering_key', 'max_attempts', 'metadata']) = '{}'::jsonb
            AND coalesce(jsonb_typeof(item -> 'priority'), 'null') IN ('null', 'number', 'string')
            AND (item ->> 'priority' IS NULL OR (item ->> 'priority') ~ '^-?[0-9]{1,9}$')
            AND coalesce(jsonb_typeof(item -> 'max_attempts'), 'null') IN ('null', 'number', 'string')
            AND (item ->> 'max_attempts' IS NULL OR (item ->> 'max_attempts') ~ '^-?[0-9]{1,9}$')
            AND coalesce(jsonb_typeof(item -> 'metadata'), 'null') IN ('null', 'object')
            AND coalesce(jsonb_typeof(item -> 'idempotency_key'), 'null') IN ('null', 'string')
            AND coalesce(jsonb_typeof(item -> 'ordering_key'), 'null') IN ('null', 'string') THEN 1
           ELSE 2
         END
$$;

REVOKE ALL ON FUNCTION herald._item_shape(jsonb) FROM PUBLIC;
