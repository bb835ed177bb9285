-- herald._producer() — who a message belongs to: the calling role (herald._caller),
-- or 'intake:<name>' when a member of herald_intake (the HTTP intake) names the
-- producer it serves with set_config('herald.producer', <name>, true) in the same
-- transaction. Scopes idempotency keys (herald._enqueue) and visibility (herald.status).
-- Errors: 42501 COLUMN 'herald.producer' when the caller is not a member of
-- herald_intake; HR012 'herald.producer' when the name is not 1 to 64 of [A-Za-z0-9._-].
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._producer()
RETURNS text
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
  v_named text := current_setting('herald.producer', true);
BEGIN
  IF v_named IS NULL OR v_named = '' THEN
    RETURN herald._caller();
  END IF;
  IF NOT pg_has_role(herald._caller(), 'herald_intake', 'MEMBER') THEN
    RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege', COLUMN = 'herald.producer',
      MESSAGE = 'herald.producer: only members of herald_intake may name the producer they serve';
  END IF;
  IF v_named !~ '^[A-Za-z0-9._-]{1,64}$' THEN
    PERFORM herald._reject(code => 'HR012', field => 'herald.producer', message => 'must be 1 to 64 of A-Z a-z 0-9 . _ -');
  END IF;
  RETURN 'intake:' || v_named;
END
$$;

REVOKE ALL ON FUNCTION herald._producer() FROM PUBLIC;
COMMENT ON FUNCTION herald._producer() IS
  'Private: the producer of the current call (the role, or intake:<name> named by a herald_intake member).';
