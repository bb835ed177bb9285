-- herald._owner() — whose messages the caller may read (herald.status) and cancel
-- (herald.cancel) by id: its producer (herald._producer), or NULL, meaning every
-- producer's, for a member of herald_admin that names no producer. One SQL
-- expression, inlined into its callers. Errors: those of herald._producer. Locks: none.
CREATE OR REPLACE FUNCTION herald._owner()
RETURNS text
LANGUAGE sql
STABLE
AS $$
  SELECT CASE WHEN coalesce(current_setting('herald.producer', true), '') = ''
                   AND pg_has_role(herald._caller(), 'herald_admin', 'MEMBER') THEN NULL
              ELSE herald._producer() END
$$;

REVOKE ALL ON FUNCTION herald._owner() FROM PUBLIC;
COMMENT ON FUNCTION herald._owner() IS
  'Private: the producer whose messages the caller may read and cancel; NULL for an admin naming none (all).';
