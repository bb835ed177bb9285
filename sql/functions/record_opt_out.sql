-- herald.record_opt_out(kind, recipient, opted_out, source, now) — a recipient said
-- STOP (opted_out) or START to a provider (Twilio's inbound messages): STOP adds an
-- 'unsubscribed' entry to herald.suppressions (an entry already there stays as it
-- is); START removes the entry only when its reason is 'unsubscribed' (a bounce, a
-- complaint or an operator's entry stays). Returns whether the list changed. Unsent
-- messages to the recipient end 'suppressed' at their claim. Errors: 22V12 kind
-- (NULL, not a channel kind), recipient (NULL, empty, over 320 characters),
-- opted_out NULL, source (NULL, not 1 to 32 of a-z 0-9 _). Index: suppressions_pkey.
-- Locks: the entry. SECURITY DEFINER for herald_events.
CREATE OR REPLACE FUNCTION herald.record_opt_out(
  kind text, recipient text, opted_out boolean, source text, now timestamptz DEFAULT now()
) RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  clock_ok boolean := herald._check_clock(now => record_opt_out.now); -- first: a forged clock changes nothing
  changed integer;
BEGIN
  PERFORM herald._check_not_null(ARRAY['kind', 'recipient', 'opted_out', 'source'],
    ARRAY[kind IS NOT NULL, recipient IS NOT NULL, opted_out IS NOT NULL, source IS NOT NULL]);
  PERFORM herald._check_kind(kind => kind);
  IF length(recipient) NOT BETWEEN 1 AND 320 THEN
    PERFORM herald._reject(code => '22V12', field => 'recipient', message => 'must be 1 to 320 characters');
  END IF;
  PERFORM herald._check_source(source => source);
  IF opted_out THEN
    INSERT INTO herald.suppressions (kind, recipient, reason, source, created_at)
    VALUES (kind, herald._suppression_key(kind => kind, recipient => recipient), 'unsubscribed', source, record_opt_out.now)
    ON CONFLICT ON CONSTRAINT suppressions_pkey DO NOTHING;
  ELSE
    DELETE FROM herald.suppressions s
    WHERE s.kind = record_opt_out.kind
      AND s.recipient = herald._suppression_key(kind => record_opt_out.kind, recipient => record_opt_out.recipient)
      AND s.reason = 'unsubscribed';
  END IF;
  GET DIAGNOSTICS changed = ROW_COUNT;
  RETURN changed > 0;
END
$$;

REVOKE ALL ON FUNCTION herald.record_opt_out(text, text, boolean, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.record_opt_out(text, text, boolean, text, timestamptz) TO herald_events, herald_admin;
COMMENT ON FUNCTION herald.record_opt_out(text, text, boolean, text, timestamptz) IS
  'A recipient said STOP (suppress as unsubscribed) or START (lift an unsubscribe, not a bounce or an operator''s entry).';
