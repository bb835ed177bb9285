-- herald._recipient_pattern(kind) — the syntax of a recipient of a channel kind, as a
-- regular expression without anchors: 'email' (the address rule of
-- herald._email_address but its two lengths), 'sms' (E.164: '+', a non-zero digit,
-- 6 to 14 more digits), 'webhook' (an http:// or https:// URL without white space);
-- NULL for 'custom' (any recipient). The one place these expressions are written:
-- herald._email_address, herald._valid and herald._validate anchor one for a single
-- recipient ('^(?:' || p || ')$'), herald._recipient_list_kind repeats one over a
-- whole list. None of them matches a newline, which is what lets the list be one
-- string with a recipient per line.
-- The e-mail expression: the local part as dot-separated runs of
-- letters, digits and !#$%&'*+/=?^_`{|}~-, the domain as runs of letters and digits
-- joined by a dot or by hyphens (so no label starts or ends with a hyphen). No
-- bounded repetition inside a repeated group (the textbook
-- `([A-Za-z0-9-]{0,61}[A-Za-z0-9])?` per label): PostgreSQL's regex engine expands
-- those into a large automaton, which cost 5 µs per address. Written so that at each
-- character only one branch can continue: release 5's
-- `[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?` per label (the same language) kept two alive
-- at every letter and cost a fifth more (9,050 against 7,290 instructions an address,
-- callgrind).
-- IMMUTABLE and one SQL expression: called with a constant kind, the planner folds
-- the whole pattern to a constant, so a regex match costs what a literal would.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._recipient_pattern(kind text)
RETURNS text
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT CASE kind
           WHEN 'email' THEN '[A-Za-z0-9!#$%&''*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&''*+/=?^_`{|}~-]+)*@[A-Za-z0-9]+((\.|-+)[A-Za-z0-9]+)*'
           WHEN 'sms' THEN '\+[1-9][0-9]{6,14}'
           WHEN 'webhook' THEN 'https?://[^\s/?#]+([/?#]\S*)?'
         END
$$;

REVOKE ALL ON FUNCTION herald._recipient_pattern(text) FROM PUBLIC;
