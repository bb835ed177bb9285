-- herald._punycode(label) — RFC 3492 Punycode of one domain label (without the xn--
-- prefix IDNA adds): 'bücher' → 'bcher-kva'. For the hint of an address whose domain
-- is in Unicode (herald._address_problem); herald stores no converted address.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._punycode(label text)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
AS $$
DECLARE
  cps integer[] := ARRAY(SELECT ascii(c) FROM regexp_split_to_table(label, '') AS c);
  output text := '';
  n bigint := 128;
  delta bigint := 0;
  bias bigint := 72;
  h integer;
  b integer;
  m bigint;
  q bigint;
  k bigint;
  t bigint;
  c integer;
  d bigint;
  first boolean;
BEGIN
  SELECT string_agg(chr(x), '' ORDER BY o), count(*) INTO output, b
  FROM unnest(cps) WITH ORDINALITY AS u (x, o) WHERE x < 128;
  output := coalesce(output, '');
  h := b;
  IF b > 0 THEN
    output := output || '-';
  END IF;
  WHILE h < cardinality(cps) LOOP
    m := (SELECT min(x) FROM unnest(cps) AS x WHERE x >= n);
    delta := delta + (m - n) * (h + 1);
    n := m;
    FOREACH c IN ARRAY cps LOOP
      IF c < n THEN
        delta := delta + 1;
      ELSIF c = n THEN
        q := delta;
        k := 36;
        LOOP
          t := CASE WHEN k <= bias THEN 1 WHEN k >= bias + 26 THEN 26 ELSE k - bias END;
          EXIT WHEN q < t;
          d := t + (q - t) % (36 - t);
          output := output || chr((CASE WHEN d < 26 THEN 97 + d ELSE 22 + d END)::integer);
          q := (q - t) / (36 - t);
          k := k + 36;
        END LOOP;
        output := output || chr((CASE WHEN q < 26 THEN 97 + q ELSE 22 + q END)::integer);
        -- adapt the bias (RFC 3492 §6.1)
        first := h = b;
        d := CASE WHEN first THEN delta / 700 ELSE delta / 2 END;
        d := d + d / (h + 1);
        k := 0;
        WHILE d > ((36 - 1) * 26) / 2 LOOP
          d := d / (36 - 1);
          k := k + 36;
        END LOOP;
        bias := k + ((36 - 1 + 1) * d) / (d + 38);
        delta := 0;
        h := h + 1;
      END IF;
    END LOOP;
    delta := delta + 1;
    n := n + 1;
  END LOOP;
  RETURN output;
END
$$;

REVOKE ALL ON FUNCTION herald._punycode(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._punycode(text) IS
  'Private: the RFC 3492 Punycode of a domain label (for the ASCII form an error suggests).';
