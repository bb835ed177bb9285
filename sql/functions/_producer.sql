-- herald._producer() — who a message belongs to: the calling role (herald._caller),
-- or 'intake:<name>' when a member of herald_intake (the HTTP intake) names the
-- producer it serves with set_config('herald.producer', <name>, true) in the same
-- transaction (herald._named_producer checks and builds that). Scopes idempotency
-- keys (herald._enqueue) and visibility (herald.status). One SQL expression, inlined
-- into its callers. Errors: those of herald._named_producer. Locks: none.
CREATE OR REPLACE FUNCTION herald._producer()
RETURNS text
LANGUAGE sql
STABLE
AS $$
  SELECT CASE WHEN coalesce(current_setting('herald.producer', true), '') = '' THEN herald._caller()
              ELSE herald._named_producer(name => current_setting('herald.producer', true)) END
$$;

REVOKE ALL ON FUNCTION herald._producer() FROM PUBLIC;
COMMENT ON FUNCTION herald._producer() IS
  'Private: the producer of the current call (the role, or intake:<name> named by a herald_intake member).';
