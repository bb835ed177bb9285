-- herald._check_kind(kind) — refuse a channel kind herald does not know: 22V12 COLUMN
-- 'kind' unless it is email, sms, webhook or custom (the kinds of herald.channels and
-- herald.suppressions). NULL passes (callers refuse NULL with the other arguments).
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._check_kind(kind text)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
AS $$
BEGIN
  IF kind NOT IN ('email', 'sms', 'webhook', 'custom') THEN
    PERFORM herald._reject(code => '22V12', field => 'kind', message => format('%L is not a channel kind', kind),
      hint => 'email, sms, webhook or custom');
  END IF;
END
$$;

REVOKE ALL ON FUNCTION herald._check_kind(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._check_kind(text) IS 'Private: 22V12 kind unless email, sms, webhook or custom.';
