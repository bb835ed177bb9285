-- herald._time_zone(name) — whether `name` names a time zone of PostgreSQL's IANA
-- database, written as such names are: UTC, Etc/GMT-14..Etc/GMT+12, or an area and a
-- location of letters, _ and - (Europe/Berlin, America/Argentina/Buenos_Aires), at
-- most 64 characters. False for POSIX specifications, which PostgreSQL also takes
-- ('UTC+3' is three hours west of UTC; 'Abc/5'), offsets, abbreviations, and names
-- the database does not have. For the recipient_zone of an enqueue (herald._valid,
-- herald._validate), a stored one (herald._quiet_end) and a channel's quiet_zone
-- (trigger channels_quiet_zone). PL/pgSQL: the lookup raises 22023 for an unknown
-- name, caught in an inner block (a subtransaction only for a well-formed name, not
-- for NULL; pg_timezone_names reads every zone file). STABLE. Locks: none.
CREATE OR REPLACE FUNCTION herald._time_zone(name text)
RETURNS boolean
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
  v_local timestamp;
BEGIN
  IF name IS NULL OR length(name) > 64 OR name !~ '^(UTC|Etc/GMT[+-](1[0-4]|[0-9])|[A-Z][A-Za-z]*(/[A-Za-z][A-Za-z_-]*)+)$' THEN
    RETURN false; -- before the inner block: no subtransaction for NULL or a malformed name
  END IF;
  BEGIN
    v_local := timezone(name, timestamptz '2000-01-01 00:00+00'); -- an assignment: no query to plan
  EXCEPTION WHEN invalid_parameter_value THEN
    RETURN false;
  END;
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION herald._time_zone(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._time_zone(text) IS
  'Private: whether a text is the name of a time zone PostgreSQL knows (UTC, Area/Location).';
