-- herald._event_detail(kind, provider_message_id, error_class, error, attempts) — the
-- detail object of a log event: sent {provider_message_id, attempts}; dead
-- {error_class, error, attempts}; otherwise {} (nulls left out). Inlined into the
-- statements that append terminal events (fail, reap_stale, cancel) and, for the
-- 'sent' events complete stores as typed arrays (release 15), into herald._log_detail,
-- which the readers use. EXECUTE for herald_consumer and herald_admin, who read the
-- view herald.log (a view's functions run with its reader's privileges).
-- STABLE, not IMMUTABLE: jsonb_build_object is STABLE, and PostgreSQL does not
-- inline a function declared less volatile than its body (release 2 declared it
-- IMMUTABLE, so each event ran it as a separate SQL-function call: ~1 s of a
-- 200,000-message drain in pg_stat_statements, plus the call overhead).
-- A 'sent' detail names its non-null members itself instead of building every member
-- and stripping the nulls (which copies the object again): the same object, about
-- 4,800 instructions less per event, which complete pays for every message it
-- reports (release 13).
CREATE OR REPLACE FUNCTION herald._event_detail(kind text, provider_message_id text, error_class text, error text, attempts integer)
RETURNS jsonb
LANGUAGE sql
STABLE
AS $$
  SELECT CASE kind
           WHEN 'sent' THEN CASE
             WHEN attempts IS NULL THEN jsonb_strip_nulls(jsonb_build_object(
               'provider_message_id', provider_message_id, 'attempts', attempts))
             WHEN provider_message_id IS NULL THEN jsonb_build_object('attempts', attempts)
             ELSE jsonb_build_object('provider_message_id', provider_message_id, 'attempts', attempts)
           END
           WHEN 'dead' THEN jsonb_strip_nulls(jsonb_build_object(
             'error_class', error_class, 'error', error, 'attempts', attempts))
           ELSE '{}'::jsonb
         END
$$;

REVOKE ALL ON FUNCTION herald._event_detail(text, text, text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald._event_detail(text, text, text, text, integer) TO herald_consumer, herald_admin;
