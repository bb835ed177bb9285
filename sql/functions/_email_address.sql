-- herald._email_address(recipient, syntax_checked) — true when recipient is an e-mail
-- address herald accepts: local-part@domain, at most 254 characters; the local part of
-- letters, digits and !#$%&'*+/=?^_`{|}~.- with no leading, trailing or double dot;
-- the domain of dot-separated labels of 1 to 63 letters, digits and hyphens, no label
-- starting or ending with a hyphen. The one e-mail rule behind herald._valid and
-- herald._validate.
-- One regular expression (herald._recipient_pattern('email')) holds every rule but
-- the two lengths. syntax_checked (default false) says the caller has already
-- matched recipient against that expression — herald._store_valid does so for a
-- whole batch at once with herald._recipient_list_kind — and then only the lengths
-- are tested here. A caller that passes true without that check accepts anything of
-- the right lengths.
-- Lengths are octet_length, which reads the stored size instead of counting
-- characters: the expression admits ASCII only, so for any address it accepts the
-- two are equal, and a longer non-ASCII string fails either way. The label-length
-- test runs only for an address long enough to hold a 64-character label (66
-- characters): 64 characters other than '.' and '@' with no '@' after them lie in
-- the domain, as the expression allows one '@'. The usual address, under 66
-- octets, is settled by one octet_length (release 8; it took two before, 820
-- instructions each).
-- tests/email_test.go compares the verdict with release 4's rule on every short
-- string over a five-character alphabet.
-- One SQL expression, so the planner inlines it (and folds syntax_checked when it is
-- a constant). Locks: none.
CREATE OR REPLACE FUNCTION herald._email_address(recipient text, syntax_checked boolean DEFAULT false)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT (octet_length(recipient) < 66 OR (octet_length(recipient) <= 254 AND recipient !~ '[^.@]{64}[^@]*$'))
     AND (syntax_checked OR recipient ~ ('^(?:' || herald._recipient_pattern('email') || ')$'))
$$;

REVOKE ALL ON FUNCTION herald._email_address(text, boolean) FROM PUBLIC;
