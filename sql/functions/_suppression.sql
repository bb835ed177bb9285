-- herald._suppression(kind, recipient, now) — the entry of herald.suppressions that
-- covers the recipient at now (same kind, the recipient's herald._suppression_key, no
-- expires_at or a later one): no row or one. Callers test it with
-- EXISTS (SELECT FROM herald._suppression(…)). A set-returning SQL function so that
-- the planner inlines it (a scalar SQL function holding a sub-select is not inlined,
-- and would be planned and run apart for every message). Index: suppressions_pkey.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._suppression(kind text, recipient text, now timestamptz)
RETURNS SETOF herald.suppressions
LANGUAGE sql
STABLE
AS $$
  SELECT s.*
  FROM herald.suppressions s
  WHERE s.kind = _suppression.kind
    AND s.recipient = herald._suppression_key(kind => _suppression.kind, recipient => _suppression.recipient)
    AND (s.expires_at IS NULL OR s.expires_at > _suppression.now)
$$;

REVOKE ALL ON FUNCTION herald._suppression(text, text, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._suppression(text, text, timestamptz) IS
  'Private: the active suppression covering a recipient, if any (an inlined set-returning function).';
