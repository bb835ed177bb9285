-- herald._base64(text) — true when text is base64 (RFC 4648, the standard alphabet,
-- padded; line breaks allowed between groups) that decodes. IMMUTABLE. Locks: none.
CREATE OR REPLACE FUNCTION herald._base64(text text)
RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
AS $$
BEGIN
  IF text !~ '^[A-Za-z0-9+/\r\n]*={0,2}[\r\n]*$' THEN
    RETURN false;
  END IF;
  PERFORM decode(text, 'base64');
  RETURN true;
EXCEPTION WHEN invalid_parameter_value THEN
  RETURN false;
END
$$;

REVOKE ALL ON FUNCTION herald._base64(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._base64(text) IS 'Private: whether a text is base64 that decodes.';
