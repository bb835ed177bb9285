-- herald._recipient_pattern(kind) — the syntax of a recipient of a channel kind, as a
-- regular expression without anchors: 'email' (herald._email_address without its two
-- lengths), 'sms' (E.164: '+', a non-zero digit, 6 to 14 more digits), 'webhook' (an
-- http:// or https:// URL without white space: a host, a port of 1 to 65535 if any;
-- user info is matched here and refused by herald._refused_address); NULL for 'custom'. The one place these
-- expressions are written. None matches a newline, so herald._recipient_list_kind can
-- match a whole batch joined by newlines at once.
-- The e-mail expression lets one branch continue at each character and has no bounded
-- repetition inside a repeated group: PostgreSQL's engine expands those into large
-- automata. IMMUTABLE, one expression: a constant kind folds to a constant pattern.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._recipient_pattern(kind text)
RETURNS text
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT CASE kind
           WHEN 'email' THEN '[A-Za-z0-9!#$%&''*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&''*+/=?^_`{|}~-]+)*@[A-Za-z0-9]+((\.|-+)[A-Za-z0-9]+)*'
           WHEN 'sms' THEN '\+[1-9][0-9]{6,14}'
           WHEN 'webhook' THEN 'https?://([^\s/?#@]*@)?(\[[^\s/?#\]]*\]|[^\s/?#:\[\]@]+)'
                               '(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?([/?#]\S*)?'
         END
$$;

REVOKE ALL ON FUNCTION herald._recipient_pattern(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._recipient_pattern(text) IS
  'Private: the regular expression of a recipient of a channel kind.';
