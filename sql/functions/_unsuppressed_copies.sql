-- herald._unsuppressed_copies(payload, now) — an e-mail payload without the copies
-- (cc, bcc) that herald.suppressions covers at now: an address that bounced, complained
-- or unsubscribed receives no copy either. A list left empty is removed; the other
-- fields are unchanged. herald.claim_batch hands this to the runner for a payload
-- with copies while the list has entries; the stored payload keeps them. The copies
-- are herald._copies'. Index: suppressions_pkey, a probe per copy. Locks: none.
CREATE OR REPLACE FUNCTION herald._unsuppressed_copies(payload jsonb, now timestamptz)
RETURNS jsonb
LANGUAGE sql
STABLE
AS $$
  SELECT (payload - '{cc,bcc}'::text[])
         || coalesce((SELECT jsonb_object_agg(k.list, k.kept) -- a list left empty has no row
                      FROM (SELECT c.list, jsonb_agg(to_jsonb(c.address) ORDER BY c.ordinal) AS kept
                            FROM herald._copies(payload => payload) AS c
                            WHERE NOT EXISTS (SELECT FROM herald._suppression(kind => 'email', recipient => c.address,
                                                                              now => _unsuppressed_copies.now))
                            GROUP BY c.list) AS k), '{}')
$$;

REVOKE ALL ON FUNCTION herald._unsuppressed_copies(jsonb, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._unsuppressed_copies(jsonb, timestamptz) IS
  'Private: an e-mail payload without the cc and bcc addresses on the suppression list.';
