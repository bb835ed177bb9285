-- herald._recipient_list_kind(list, n) — the channel kind whose recipient syntax
-- (herald._recipient_pattern) every line of `list` matches, `list` being n recipients
-- joined by newlines: 'email', else 'sms', else 'webhook'; NULL when some line matches
-- none, or when `list` does not hold exactly n - 1 newlines (a recipient holds one).
-- Why: a regular expression match costs more to start than to run, so one match over
-- the joined list is cheaper than one per recipient; herald._valid then skips each
-- row's own match for that kind. A NULL answer only means rows are matched one by one.
-- IMMUTABLE, one expression, inlined: pass `list` as a variable. Locks: none.
CREATE OR REPLACE FUNCTION herald._recipient_list_kind(list text, n integer)
RETURNS text
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT CASE
           WHEN octet_length(list) - octet_length(replace(list, E'\n', '')) IS DISTINCT FROM n - 1 THEN NULL
           WHEN list ~ ('^(?:' || herald._recipient_pattern('email') || ')(?:\n(?:' || herald._recipient_pattern('email') || '))*$') THEN 'email'
           WHEN list ~ ('^(?:' || herald._recipient_pattern('sms') || ')(?:\n(?:' || herald._recipient_pattern('sms') || '))*$') THEN 'sms'
           WHEN list ~ ('^(?:' || herald._recipient_pattern('webhook') || ')(?:\n(?:' || herald._recipient_pattern('webhook') || '))*$') THEN 'webhook'
         END
$$;

REVOKE ALL ON FUNCTION herald._recipient_list_kind(text, integer) FROM PUBLIC;
COMMENT ON FUNCTION herald._recipient_list_kind(text, integer) IS
  'Private: the channel kind whose syntax every recipient of a newline-joined list matches.';
