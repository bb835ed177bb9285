-- herald._unsuppressed_copies(payload, now) — an e-mail payload without the copies
-- (cc, bcc) that herald.suppressions covers at now: an address that bounced, complained
-- or unsubscribed receives no copy either. A list left empty is removed; the other
-- fields are unchanged. herald.claim_batch hands this to the runner for a payload
-- with copies while the list has entries; the stored payload keeps them.
-- Index: suppressions_pkey, a probe per copy. Locks: none.
CREATE OR REPLACE FUNCTION herald._unsuppressed_copies(payload jsonb, now timestamptz)
RETURNS jsonb
LANGUAGE sql
STABLE
AS $$
  SELECT (payload - '{cc,bcc}'::text[])
         || coalesce(jsonb_object_agg(x.k, x.kept) FILTER (WHERE jsonb_array_length(x.kept) > 0), '{}')
  FROM (SELECT k, (SELECT coalesce(jsonb_agg(to_jsonb(a.addr) ORDER BY a.i), '[]')
                   FROM jsonb_array_elements_text(payload -> k) WITH ORDINALITY AS a (addr, i)
                   WHERE NOT EXISTS (SELECT FROM herald._suppression(kind => 'email', recipient => a.addr,
                                                                     now => _unsuppressed_copies.now))) AS kept
        FROM unnest('{cc,bcc}'::text[]) AS k
        WHERE jsonb_typeof(payload -> k) = 'array') AS x
$$;

REVOKE ALL ON FUNCTION herald._unsuppressed_copies(jsonb, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._unsuppressed_copies(jsonb, timestamptz) IS
  'Private: an e-mail payload without the cc and bcc addresses on the suppression list.';
