-- herald._suppression_key(kind, recipient) — how a recipient is kept in and looked up
-- in herald.suppressions: an e-mail address in lower case (providers and mailbox hosts
-- treat addresses case-insensitively), any other recipient as it is. IMMUTABLE SQL,
-- inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._suppression_key(kind text, recipient text)
RETURNS text
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT CASE WHEN kind = 'email' THEN lower(recipient) ELSE recipient END
$$;

REVOKE ALL ON FUNCTION herald._suppression_key(text, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._suppression_key(text, text) IS
  'Private: the form of a recipient in herald.suppressions (e-mail in lower case).';
