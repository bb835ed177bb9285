-- herald._caller() — the role a call comes from: the role set with SET ROLE, else the
-- session's login role. Inside a SECURITY DEFINER function current_user is the
-- owner, but the setting `role` still holds what the caller set. Locks: none.
CREATE OR REPLACE FUNCTION herald._caller()
RETURNS text
LANGUAGE sql
STABLE
AS $$
  SELECT CASE WHEN r = 'none' THEN session_user::text ELSE r END FROM current_setting('role') AS r
$$;

REVOKE ALL ON FUNCTION herald._caller() FROM PUBLIC;
COMMENT ON FUNCTION herald._caller() IS
  'Private: the calling role (SET ROLE, else the login role), also inside SECURITY DEFINER functions.';
