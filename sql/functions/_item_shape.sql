-- herald._item_shape(item) — the JSON shape of one enqueue_batch element, as a
-- number, so that one max() over a batch says which path it takes:
--   0  a value that jsonb orders before the four-member object R =
--      {"": null, "a": null, "b": null, "c": null}: every object of at most three
--      members, and every array and scalar. Nothing else is checked here;
--      enqueue_batch takes out channel, recipient and payload with ->> and ->
--      (NULL from a non-object or a missing key) and its batch check decides;
--   1  an object of four or more members, all of them channel, recipient, payload
--      or the optional fields priority, idempotency_key, ordering_key, max_attempts
--      and metadata (null allowed), channel and recipient JSON strings, each
--      optional field of the JSON type enqueue_batch's element-by-element path
--      accepts (priority and max_attempts numbers or strings of an integer's digits,
--      the keys strings, metadata an object) — not run_at, whose check needs a cast
--      that can raise;
--   2  anything else.
-- Shape 0 is one comparison (release 9). jsonb orders objects by their number of
-- members first, so against R any object of another size is settled at the first
-- step (fewer members: less; more: greater). An object of four members is less
-- than R only if its first key in storage order (shortest first) is "" and its
-- second sorts before "a"; with channel, recipient and payload among its keys the
-- second is "channel", so such an object lacks one of the three. 1,100
-- instructions an element, where release 8's two tests (a SQL/JSON path and the
-- key set by `-`) cost 8,200 (callgrind).
-- Why shape 0 needs no more: an element of at most three members with an unknown
-- field lacks channel, recipient or payload, and that NULL, like the NULLs of an
-- array, a scalar or a missing key, fails herald._valid or the channel join; a
-- channel or recipient that is not a JSON string is caught by enqueue_batch's batch
-- check (the recipients' list matching one kind's expression, which the text of no
-- number, boolean, array or object matches, or else one SQL/JSON path over the
-- batch). Whatever the fast path refuses goes to enqueue_batch's element-by-element
-- path, which raises the error of the first bad element, as before.
-- For shape 1 the order of the CASE matters: the object and string test (a strict
-- SQL/JSON path: `@.channel` on a non-object or a missing key is an error, so the
-- filter is false, and `starts with ""` holds for every string and nothing else)
-- before `-` (which raises on a scalar), the integer casts' digit tests last.
-- A field added to the message goes into the list of shape 1 and into
-- enqueue_batch's second pass, or the fast path would drop it.
-- One SQL expression without sub-selects, so the planner inlines it into
-- enqueue_batch's pass.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._item_shape(item jsonb)
RETURNS integer
LANGUAGE sql
STABLE
AS $$
  SELECT CASE
           WHEN item < '{"": null, "a": null, "b": null, "c": null}'::jsonb THEN 0
           WHEN (item @? 'strict $ ? (@.channel starts with "" && @.recipient starts with "")') IS NOT TRUE THEN 2
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
