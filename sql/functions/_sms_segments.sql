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
BEGIN
  IF body ~ ('^' || herald._gsm7() || '*$') THEN
    RETURN herald._segments(units => length(body) + regexp_count(body, herald._gsm7(extension_only => true)), single => 160, part => 153);
  END IF;
  RETURN herald._segments(units => length(body) + regexp_count(body, '[\U00010000-\U0010ffff]'), single => 70, part => 67);
END
$$;

REVOKE ALL ON FUNCTION herald._sms_segments(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._sms_segments(text) IS
  'Private: the SMS segments a text takes (GSM-7 160/153, else UCS-2 70/67).';
