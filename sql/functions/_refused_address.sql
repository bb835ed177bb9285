-- herald._refused_address(url) — why a webhook URL is refused at enqueue, or NULL:
-- it carries user info (user:password@, which HTTP clients turn into an Authorization
-- header), or its host is an IP address that is not canonical (127.1, 0x7f.1) or lies
-- in herald._refused_networks(). Host names are judged by the runner at connect time.
-- Used by herald._valid and herald._validate (22V02 recipient). Locks: none.
CREATE OR REPLACE FUNCTION herald._refused_address(url text)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
AS $$
DECLARE
  v_authority text := substring(url from '^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)');
  v_host text;
  v_addr inet;
BEGIN
  IF v_authority IS NULL THEN
    RETURN NULL;
  ELSIF strpos(v_authority, '@') > 0 THEN
    RETURN 'carries user info (user:password@); give the receiver its credentials another way';
  END IF;
  v_host := coalesce(substring(v_authority from '^\[([^]]*)\]'), substring(v_authority from '^([^:]*)'));
  IF v_host !~ ':' AND v_host !~* '^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+))*\.?$' THEN
    RETURN NULL; -- a host name
  END IF;
  IF v_host !~ ':' AND v_host !~ '^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$' THEN
    RETURN format('has the host %s, an IP address not in dotted-quad form', v_host);
  END IF;
  BEGIN
    v_addr := v_host::inet;
  EXCEPTION WHEN invalid_text_representation THEN
    RETURN format('has the host [%s], which is not an IPv6 address', v_host);
  END;
  RETURN (SELECT format('has the host %s, a %s address', v_host, n.reason)
          FROM herald._refused_networks() AS n WHERE n.network >>= v_addr LIMIT 1);
END
$$;

REVOKE ALL ON FUNCTION herald._refused_address(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._refused_address(text) IS
  'Private: why a webhook URL is refused at enqueue (user info, a literal refused address), or NULL.';
