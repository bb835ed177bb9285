-- herald._log_detail(kind, detail, provider_message_id, attempts) — the detail a reader
-- shows for one event of herald.log_statements: the stored JSON when there is one; for
-- a 'sent' event stored as typed arrays (attempts set) the object herald._event_detail
-- builds; otherwise {}. The one rule behind the view herald.log and herald._log_after,
-- which inline it. EXECUTE for herald_consumer and herald_admin. Locks: none.
CREATE OR REPLACE FUNCTION herald._log_detail(kind text, detail jsonb, provider_message_id text, attempts integer)
RETURNS jsonb
LANGUAGE sql
STABLE
AS $$
  SELECT coalesce(detail,
                  CASE WHEN attempts IS NOT NULL
                    THEN herald._event_detail(kind, provider_message_id, NULL, NULL, attempts) END,
                  '{}'::jsonb)
$$;

REVOKE ALL ON FUNCTION herald._log_detail(text, jsonb, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald._log_detail(text, jsonb, text, integer) TO herald_consumer, herald_admin;
COMMENT ON FUNCTION herald._log_detail(text, jsonb, text, integer) IS
  'Private: the detail a reader shows for one log event (inlined).';
