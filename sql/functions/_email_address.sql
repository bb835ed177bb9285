-- herald._email_address(recipient) — true when recipient is an e-mail address
-- herald accepts: local-part@domain, at most 254 characters; the local part of
-- letters, digits and !#$%&'*+/=?^_`{|}~.- with no leading, trailing or double dot;
-- the domain of dot-separated labels of 1 to 63 letters, digits and hyphens, no label
-- starting or ending with a hyphen. The one e-mail rule behind herald._valid and
-- herald._validate.
-- One regular expression holds every rule but the label length: the local part as
-- dot-separated runs of its characters, the domain as runs of letters and digits
-- joined by a dot or by hyphens. No bounded repetition inside a repeated group (the
-- textbook `([A-Za-z0-9-]{0,61}[A-Za-z0-9])?` per label): PostgreSQL's regex engine
-- expands those into a large automaton, which cost 5 µs per address. The domain is
-- written so that at each character only one branch can continue: release 5's
-- `[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?` per label (the same language) kept two
-- alive at every letter and cost a fifth more (9,050 against 7,290 instructions an
-- address, callgrind). tests/email_test.go compares the verdict with release 4's
-- rule on every short string over a five-character alphabet.
-- Lengths are octet_length, which reads the stored size instead of counting
-- characters: the expression admits ASCII only, so for any address it accepts the
-- two are equal, and a longer non-ASCII string fails either way. The label-length
-- test runs only for an address long enough to hold a 64-character label (66
-- characters): 64 characters other than '.' and '@' with no '@' after them lie in
-- the domain, as the expression allows one '@'.
-- One SQL expression, so the planner inlines it. Locks: none.
CREATE OR REPLACE FUNCTION herald._email_address(recipient text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT octet_length(recipient) <= 254
     AND recipient ~ '^[A-Za-z0-9!#$%&''*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&''*+/=?^_`{|}~-]+)*@[A-Za-z0-9]+((\.|-+)[A-Za-z0-9]+)*$'
     AND (octet_length(recipient) < 66 OR recipient !~ '[^.@]{64}[^@]*$')
$$;

REVOKE ALL ON FUNCTION herald._email_address(text) FROM PUBLIC;
