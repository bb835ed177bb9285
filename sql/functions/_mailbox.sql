-- herald._mailbox(value) — the address of a mailbox as herald accepts one in an e-mail
-- payload's from and reply_to: an address (herald._email_address), or a display name
-- and the address in angle brackets, 'Ana Lima <ana@example.com>'; NULL for anything
-- else. The name is characters other than "(),:;<>@[\] and control characters, with
-- no space at either end, so that no mail parser (net/mail in the runner, a
-- provider's) can read another address out of it: a quoted name such as
-- "billing@acme.test" <ceo@acme.test>, a comment, a list. One SQL expression,
-- inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._mailbox(value text)
RETURNS text
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT CASE
           WHEN herald._email_address(recipient => value) THEN value
           WHEN value ~ '^[^]["(),:;<>@\\[:cntrl:][:space:]]([^]["(),:;<>@\\[:cntrl:]]*[^]["(),:;<>@\\[:cntrl:][:space:]])? <[^<>]+>$'
                AND herald._email_address(recipient => substring(value FROM '<([^<>]+)>$'))
             THEN substring(value FROM '<([^<>]+)>$')
         END
$$;

REVOKE ALL ON FUNCTION herald._mailbox(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._mailbox(text) IS
  'Private: the address of an e-mail mailbox (address, or Name <address>), NULL when herald does not accept it.';
