-- herald._person_key(kind, recipient) — the mailbox (herald._mailbox_key) of the person
-- herald.forget and herald.subject_access are asked about, after checking the
-- arguments. Errors: 22V12 kind (not a channel kind), recipient (NULL or empty).
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._person_key(kind text, recipient text)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
AS $$
BEGIN
  IF kind IS NULL OR kind NOT IN ('email', 'sms', 'webhook', 'custom') THEN
    PERFORM herald._reject('22V12', 'kind', format('%s is not a channel kind (email, sms, webhook, custom)',
                                                   coalesce(quote_literal(kind), 'NULL')));
  END IF;
  IF recipient IS NULL OR recipient = '' THEN
    PERFORM herald._reject('22V12', 'recipient', 'must be a non-empty string');
  END IF;
  RETURN herald._mailbox_key(kind => kind, recipient => recipient);
END
$$;

REVOKE ALL ON FUNCTION herald._person_key(text, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._person_key(text, text) IS
  'Private: the checked mailbox of the person herald.forget or herald.subject_access is asked about.';
