-- herald._gsm7() — the regular-expression bracket of the characters an SMS carries in
-- GSM-7 (3GPP TS 23.038: the basic set, and the extension table's form feed, ^ { } \
-- [ ~ ] | €, which take two septets each). A text with any other character goes as
-- UCS-2. The one list herald._sms_segments counts with and herald._validate names the
-- first character outside of. A constant, folded into its callers. Locks: none.
CREATE OR REPLACE FUNCTION herald._gsm7(extension_only boolean DEFAULT false)
RETURNS text
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT CASE WHEN extension_only THEN '[\f^{}\\\[~\]|€]'
              ELSE '[@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&''()*+,./0-9:;<=>?¡A-ZÄÖÑÜ§¿a-zäöñüà\f^{}\\\[~\]|€-]' END
$$;

REVOKE ALL ON FUNCTION herald._gsm7(boolean) FROM PUBLIC;
COMMENT ON FUNCTION herald._gsm7(boolean) IS
  'Private: the GSM-7 characters (or only those of its extension table) as a regular-expression bracket.';
