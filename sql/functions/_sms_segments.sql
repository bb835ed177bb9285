-- herald._sms_segments(body) — how many SMS segments a text takes, as carriers bill
-- it: in GSM-7 (every character in herald._gsm7(); the extension table's count two)
-- 1 up to 160 septets, else one per 153; otherwise in UCS-2 (UTF-16 units: a
-- character beyond U+FFFF, most emoji, counts two) 1 up to 70, else one per 67.
-- Before a provider's own replacements (Twilio's SmartEncoded turns curly quotes
-- into GSM-7), so an upper bound. PL/pgSQL, never inlined: the statements that
-- check a text (herald._valid) carry one call, reached only when herald._sms_within
-- must count. Locks: none.
CREATE OR REPLACE FUNCTION herald._sms_segments(body text)
RETURNS integer
LANGUAGE plpgsql
IMMUTABLE
AS $$
DECLARE
  gsm boolean := body ~ ('^' || herald._gsm7() || '*$');
  -- septets (GSM-7: the extension table's characters take two), else UTF-16 units
  units integer := length(body) + CASE WHEN gsm THEN regexp_count(body, herald._gsm7(extension_only => true))
                                       ELSE regexp_count(body, '[\U00010000-\U0010ffff]') END;
  single integer := CASE WHEN gsm THEN 160 ELSE 70 END; -- a lone segment's
  part integer := CASE WHEN gsm THEN 153 ELSE 67 END;   -- each part's, beside its header
BEGIN
  RETURN CASE WHEN units <= single THEN 1 ELSE ceil(units::numeric / part)::integer END;
END
$$;

REVOKE ALL ON FUNCTION herald._sms_segments(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._sms_segments(text) IS
  'Private: the SMS segments a text takes (GSM-7 160/153, else UCS-2 70/67).';
