-- herald._segments(units, single, part) — the segments of a text of `units` characters
-- (septets or UTF-16 units) in an encoding whose lone segment holds `single` and each
-- part of a longer text `part` (the rest carries the part header). Called by
-- herald._sms_segments. Locks: none.
CREATE OR REPLACE FUNCTION herald._segments(units integer, single integer, part integer)
RETURNS integer
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT CASE WHEN units <= single THEN 1 ELSE ceil(units::numeric / part)::integer END
$$;

REVOKE ALL ON FUNCTION herald._segments(integer, integer, integer) FROM PUBLIC;
COMMENT ON FUNCTION herald._segments(integer, integer, integer) IS
  'Private: the segments of a text of so many units, given a lone segment''s and a part''s size.';
