-- herald._event_detail(kind, provider_message_id, error_class, error, attempts) — the
-- detail object of a log event: sent {provider_message_id, attempts}; dead
-- {error_class, error, attempts}; otherwise {}; null members left out. Inlined into
-- the statements that append terminal events and into herald._log_detail.
-- STABLE like jsonb_build_object: a function declared less volatile than its body is
-- not inlined. EXECUTE for herald_consumer and herald_admin, who read the view
-- herald.log (a view's functions run with its reader's privileges). Locks: none.
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
COMMENT ON FUNCTION herald._event_detail(text, text, text, text, integer) IS
  'Private: the JSON detail of a log event (inlined).';
