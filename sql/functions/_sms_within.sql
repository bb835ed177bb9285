-- herald._sms_within(body, max_segments) — whether a text takes at most max_segments
-- SMS segments (herald._sms_segments). A text of n characters is at most 2n units in
-- either encoding (two per GSM-7 extension character or UTF-16 surrogate pair), so
-- one with 2n <= 67 * max_segments fits whatever it holds: it is not counted, and a
-- usual text (under 336 characters for 10 segments) pays no regular expression.
-- Inlined into herald._valid and herald._validate. Locks: none.
CREATE OR REPLACE FUNCTION herald._sms_within(body text, max_segments integer)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT length(body) * 2 <= 67 * max_segments OR herald._sms_segments(body => body) <= max_segments
$$;

REVOKE ALL ON FUNCTION herald._sms_within(text, integer) FROM PUBLIC;
COMMENT ON FUNCTION herald._sms_within(text, integer) IS
  'Private: whether a text takes at most so many SMS segments (counted only when it could take more).';
