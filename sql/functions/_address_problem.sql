-- herald._address_problem(address) — why `address` is not an e-mail address herald
-- takes (herald._email_address), as {message, hint} for an enqueue's error (the
-- recipient in herald._validate, a cc or bcc in herald._payload_problem): a domain in
-- Unicode gets its ASCII form (IDNA: NFC, lower case, each non-ASCII label as xn--
-- and its Punycode, herald._punycode), since providers take domains in ASCII; a local
-- part outside ASCII needs SMTPUTF8 at every server on the way, which herald does not
-- ask of its providers; anything else the expected form. Locks: none.
CREATE OR REPLACE FUNCTION herald._address_problem(address text)
RETURNS text[]
LANGUAGE plpgsql
IMMUTABLE
AS $$
DECLARE
  v_local text := substring(address FROM '^(.*)@[^@]*$');
  v_domain text := substring(address FROM '@([^@]*)$');
  v_ascii text;
BEGIN
  IF v_local ~ '[^\x01-\x7f]' THEN
    RETURN ARRAY[format('%L has a local part outside ASCII, which needs SMTPUTF8 at every server on the way', address),
                 'give an address whose local part is ASCII'];
  END IF;
  IF v_domain ~ '[^\x01-\x7f]' THEN
    v_ascii := v_local || '@' || (SELECT string_agg(CASE WHEN l ~ '[^\x01-\x7f]' THEN 'xn--' || herald._punycode(label => l) ELSE l END,
                                                    '.' ORDER BY o)
                                  FROM regexp_split_to_table(lower(normalize(v_domain, NFC)), '\.') WITH ORDINALITY AS x (l, o));
    IF herald._email_address(recipient => v_ascii) THEN
      RETURN ARRAY[format('%L has a domain in Unicode: give it in ASCII (IDNA), %s', address, v_ascii),
                   'providers take domains in ASCII; libraries convert them: Python ''bücher.de''.encode(''idna''), Go idna.Lookup.ToASCII'];
    END IF;
  END IF;
  RETURN ARRAY[format('%L is not an e-mail address', address), 'expected local-part@domain, e.g. ana@example.com'];
END
$$;

REVOKE ALL ON FUNCTION herald._address_problem(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._address_problem(text) IS
  'Private: why a text is not an e-mail address herald takes ({message, hint}), with the ASCII form of a Unicode domain.';
