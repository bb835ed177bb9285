-- herald._site(host) — the site of a webhook receiver's host (lower case, no final
-- dot: herald._url_host): its registrable domain by the Public Suffix List
-- (herald.public_suffixes), one label more than its longest public suffix
-- ('example.co.uk' for a.b.example.co.uk, 'alice.herokuapp.com' for
-- x.alice.herokuapp.com; a name no rule covers has its last label as suffix); the host
-- itself when it is a public suffix, one label or an IP address. The same site the
-- runner's golang.org/x/net/publicsuffix gives (tests/publicsuffix_test.go).
-- Index: public_suffixes_pkey, one probe per label (= ANY). Locks: none.
CREATE OR REPLACE FUNCTION herald._site(host text)
RETURNS text
LANGUAGE plpgsql
STABLE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  labels text[] := string_to_array(host, '.');
  n integer := cardinality(labels);
  suffix_labels integer;
BEGIN
  IF n < 2 OR host ~ '^(\[.*\]|[0-9.]+)$' THEN
    RETURN host;
  END IF;
  SELECT coalesce(min(k - 1) FILTER (WHERE p.exception),
                  greatest(1, max(k) FILTER (WHERE p.normal), max(k + 1) FILTER (WHERE p.wildcard AND k < n)))
  INTO suffix_labels
  FROM herald.public_suffixes p, LATERAL (SELECT cardinality(string_to_array(p.suffix, '.')) AS k) AS l
  WHERE p.suffix = ANY (ARRAY(SELECT array_to_string(labels[n - i + 1:n], '.') FROM generate_series(1, n) AS i));
  RETURN array_to_string(labels[greatest(n - suffix_labels, 1):n], '.');
END
$$;
REVOKE ALL ON FUNCTION herald._site(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._site(text) IS
  'Private: a host''s registrable domain by the Public Suffix List (the host itself when it has none).';
