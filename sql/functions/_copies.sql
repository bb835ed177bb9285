-- herald._copies(payload) — the copies of an e-mail payload: each address of its cc
-- and bcc arrays (list 'cc' or 'bcc', ordinal from 1), as the runners send them. The
-- one reading of which addresses a message also goes to: herald._unsuppressed_copies
-- leaves the suppressed ones out at the claim, herald.record_delivery_events tells a
-- copy's event from a stranger's. IMMUTABLE SQL, inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._copies(payload jsonb)
RETURNS TABLE (list text, ordinal bigint, address text)
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT l.list, a.ordinal, a.address
  FROM unnest('{cc,bcc}'::text[]) AS l (list),
       jsonb_array_elements_text(CASE WHEN jsonb_typeof(_copies.payload -> l.list) = 'array'
                                      THEN _copies.payload -> l.list END) WITH ORDINALITY AS a (address, ordinal)
$$;

REVOKE ALL ON FUNCTION herald._copies(jsonb) FROM PUBLIC;
COMMENT ON FUNCTION herald._copies(jsonb) IS
  'Private: the cc and bcc addresses of an e-mail payload, by list and ordinal.';
