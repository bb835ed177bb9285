-- herald._range_key(recipient, digits) — the number range an SMS recipient belongs to,
-- for counting messages per range (channels.range_limit, herald.recipient_buckets):
-- 'range:' and its + with the first `digits` digits ('range:+8801712'). The prefix keeps
-- ranges apart from recipients in the buckets' keys. IMMUTABLE SQL, inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._range_key(recipient text, digits smallint)
RETURNS text
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT 'range:' || left(recipient, 1 + digits)
$$;
REVOKE ALL ON FUNCTION herald._range_key(text, smallint) FROM PUBLIC;
COMMENT ON FUNCTION herald._range_key(text, smallint) IS
  'Private: the number range of an SMS recipient, as herald.recipient_buckets keys it.';
