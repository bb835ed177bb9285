-- herald.unsuppress(kind, recipients) — remove recipients of a channel kind from
-- herald.suppressions (a user who subscribed again); returns how many entries went.
-- Messages already ended 'suppressed' stay so. Errors: 22V12 kind or recipients NULL.
-- Index: suppressions_pkey. Locks: the entries. Admin only (herald_admin).
CREATE OR REPLACE FUNCTION herald.unsuppress(kind text, recipients text[])
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  changed integer;
BEGIN
  PERFORM herald._check_not_null(ARRAY['kind', 'recipients'], ARRAY[kind IS NOT NULL, recipients IS NOT NULL]);
  DELETE FROM herald.suppressions s
  WHERE s.kind = unsuppress.kind
    AND s.recipient = ANY (ARRAY(SELECT herald._suppression_key(kind => unsuppress.kind, recipient => r) FROM unnest(recipients) AS r));
  GET DIAGNOSTICS changed = ROW_COUNT;
  RETURN changed;
END
$$;

REVOKE ALL ON FUNCTION herald.unsuppress(text, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.unsuppress(text, text[]) TO herald_admin;
COMMENT ON FUNCTION herald.unsuppress(text, text[]) IS 'Send to recipients of a channel kind again.';
