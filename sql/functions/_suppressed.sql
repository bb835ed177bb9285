-- herald._suppressed(kind, recipient, now) — whether herald.suppressions holds an
-- entry for the recipient that applies at now (no expires_at, or a later one). One
-- EXISTS, inlined into the statements that check many messages.
-- Index: suppressions_pkey. Locks: none.
CREATE OR REPLACE FUNCTION herald._suppressed(kind text, recipient text, now timestamptz)
RETURNS boolean
LANGUAGE sql
STABLE
AS $$
  SELECT EXISTS (SELECT FROM herald.suppressions s
                 WHERE s.kind = _suppressed.kind
                   AND s.recipient = herald._suppression_key(kind => _suppressed.kind, recipient => _suppressed.recipient)
                   AND (s.expires_at IS NULL OR s.expires_at > _suppressed.now))
$$;

REVOKE ALL ON FUNCTION herald._suppressed(text, text, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._suppressed(text, text, timestamptz) IS
  'Private: whether an active suppression covers the recipient (inlined).';
