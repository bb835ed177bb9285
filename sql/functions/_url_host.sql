-- herald._url_host(url) — the host of an http:// or https:// URL as a receiver's site is
-- counted: lower case, without user info, port or a final dot ('example.com' for
-- https://user@Example.COM.:8443/x), an IPv6 address with its brackets; '' when there
-- is none. IMMUTABLE SQL, one expression, inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._url_host(url text)
RETURNS text
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT rtrim(lower(substring(url FROM '^[^:]+://(?:[^@/?#]*@)?(\[[^]/?#]*\]|[^:/?#]*)')), '.')
$$;
REVOKE ALL ON FUNCTION herald._url_host(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._url_host(text) IS
  'Private: the lower-case host of a URL, without user info, port or final dot.';
