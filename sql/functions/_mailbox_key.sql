-- herald._mailbox_key(kind, recipient) — the mailbox a recipient reaches, as far as
-- herald can tell, for counting messages per recipient (herald.recipient_buckets): an
-- e-mail address in lower case without the +tag of its local part (ana+x@ and
-- Ana@example.com reach one mailbox), any other recipient as it is. IMMUTABLE SQL,
-- inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._mailbox_key(kind text, recipient text)
RETURNS text
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT CASE WHEN kind <> 'email' THEN recipient
              WHEN strpos(recipient, '+') = 0 THEN lower(recipient)
              ELSE regexp_replace(lower(recipient), '\+[^@]*@', '@') END
$$;

REVOKE ALL ON FUNCTION herald._mailbox_key(text, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._mailbox_key(text, text) IS
  'Private: the form of a recipient in herald.recipient_buckets (e-mail in lower case, without a +tag).';
