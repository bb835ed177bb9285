-- Trigger suppressions_normalize on herald.suppressions (BEFORE INSERT OR UPDATE, FOR
-- EACH ROW) and its function herald._suppressions_normalize(): stores the recipient
-- as herald._suppression_key makes it, so a list COPYed in with mixed-case addresses
-- matches what enqueue and claim look up. SECURITY DEFINER: an admin's COPY calls the
-- private herald._suppression_key through it. Locks: none.
CREATE OR REPLACE FUNCTION herald._suppressions_normalize()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  NEW.recipient := herald._suppression_key(kind => NEW.kind, recipient => NEW.recipient);
  RETURN NEW;
END
$$;

REVOKE ALL ON FUNCTION herald._suppressions_normalize() FROM PUBLIC;

CREATE OR REPLACE TRIGGER suppressions_normalize
  BEFORE INSERT OR UPDATE ON herald.suppressions
  FOR EACH ROW
  EXECUTE FUNCTION herald._suppressions_normalize();
COMMENT ON FUNCTION herald._suppressions_normalize() IS
  'Private: the function of trigger suppressions_normalize.';
COMMENT ON TRIGGER suppressions_normalize ON herald.suppressions IS
  'Stores recipients as herald._suppression_key makes them (e-mail addresses in lower case).';
