-- herald.suppress(kind, recipients, reason, source, expires_at) — stop sending to
-- recipients of a channel kind: every message to them not yet sent ends 'suppressed'
-- at its claim, and new ones at enqueue. An entry already there is updated (reason,
-- source, expires_at). Returns how many entries were added or updated. For lists
-- kept elsewhere, COPY into herald.suppressions works as well (the trigger
-- suppressions_normalize applies herald._suppression_key).
-- reason: manual (default), bounced, complained or unsubscribed; expires_at NULL:
-- for good. Errors: 22V12 kind, recipients, reason or source NULL, kind unknown,
-- reason unknown, a recipient empty, NULL or over 2048 bytes.
-- Index: suppressions_pkey. Locks: the entries. Admin only (herald_admin).
CREATE OR REPLACE FUNCTION herald.suppress(
  kind text,
  recipients text[],
  reason text DEFAULT 'manual',
  source text DEFAULT 'operator',
  expires_at timestamptz DEFAULT NULL
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  changed integer;
BEGIN
  PERFORM herald._check_not_null(ARRAY['kind', 'recipients', 'reason', 'source'],
    ARRAY[kind IS NOT NULL, recipients IS NOT NULL, reason IS NOT NULL, source IS NOT NULL]);
  PERFORM herald._check_kind(kind => kind);
  IF reason NOT IN ('bounced', 'complained', 'unsubscribed', 'manual') THEN
    PERFORM herald._reject(code => '22V12', field => 'reason', message => format('%L is not a suppression reason', reason),
      hint => 'manual, bounced, complained or unsubscribed');
  END IF;
  IF EXISTS (SELECT FROM unnest(recipients) AS r WHERE r IS NULL OR octet_length(r) NOT BETWEEN 1 AND 2048) THEN
    PERFORM herald._reject(code => '22V12', field => 'recipients', message => 'a recipient is NULL, empty or over 2048 bytes');
  END IF;
  INSERT INTO herald.suppressions AS s (kind, recipient, reason, source, created_at, expires_at)
  SELECT DISTINCT suppress.kind, herald._suppression_key(kind => suppress.kind, recipient => r), suppress.reason,
         suppress.source, now(), suppress.expires_at
  FROM unnest(recipients) AS r
  ON CONFLICT ON CONSTRAINT suppressions_pkey DO UPDATE
    SET reason = excluded.reason, source = excluded.source, expires_at = excluded.expires_at;
  GET DIAGNOSTICS changed = ROW_COUNT;
  RETURN changed;
END
$$;

REVOKE ALL ON FUNCTION herald.suppress(text, text[], text, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.suppress(text, text[], text, text, timestamptz) TO herald_admin;
COMMENT ON FUNCTION herald.suppress(text, text[], text, text, timestamptz) IS
  'Stop sending to recipients of a channel kind (their unsent messages end suppressed).';
