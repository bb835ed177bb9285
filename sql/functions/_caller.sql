-- herald._caller() — the role a call comes from: the role set with SET ROLE, else the
-- session's login role. Inside a SECURITY DEFINER function current_user is the
-- owner, but the setting `role` still holds what the caller set. One expression
-- without FROM, so callers inline it. Locks: none.
CREATE OR REPLACE FUNCTION herald._caller()
RETURNS text
LANGUAGE sql
STABLE
AS $$
  SELECT CASE current_setting('role') WHEN 'none' THEN session_user::text ELSE current_setting('role') END
$$;

REVOKE ALL ON FUNCTION herald._caller() FROM PUBLIC;
COMMENT ON FUNCTION herald._caller() IS
  'Private: the calling role (SET ROLE, else the login role), also inside SECURITY DEFINER functions.';
