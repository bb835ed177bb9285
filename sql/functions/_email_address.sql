-- herald._email_address(recipient, syntax_checked) — true when recipient is an e-mail
-- address herald accepts: local-part@domain, at most 254 characters; the local part of
-- letters, digits and !#$%&'*+/=?^_`{|}~.- with no leading, trailing or double dot;
-- dot-separated domain labels of 1 to 63 letters, digits and hyphens, none starting or
-- ending with a hyphen. The expression is herald._recipient_pattern('email'); this adds
-- the two lengths. syntax_checked: the caller already matched that expression (for a
-- whole batch, herald._recipient_list_kind), so only the lengths are tested.
-- One SQL expression, inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._email_address(recipient text, syntax_checked boolean DEFAULT false)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT (octet_length(recipient) < 66 OR (octet_length(recipient) <= 254 AND recipient !~ '[^.@]{64}[^@]*$'))
     AND (syntax_checked OR recipient ~ ('^(?:' || herald._recipient_pattern('email') || ')$'))
$$;

REVOKE ALL ON FUNCTION herald._email_address(text, boolean) FROM PUBLIC;
COMMENT ON FUNCTION herald._email_address(text, boolean) IS
  'Private: true when a recipient is an e-mail address herald accepts.';
