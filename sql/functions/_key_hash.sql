-- herald._key_hash(ordering_key, recipient) — the partition key of a message's log
-- events: hashtext of its ordering_key, or of its recipient when it has none. A group
-- with P partitions reads partition (key_hash & 2147483647) % P, so one key's events
-- stay in one partition, in order. Inlined into the statements that append events.
CREATE OR REPLACE FUNCTION herald._key_hash(ordering_key text, recipient text)
RETURNS integer
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT hashtext(coalesce(ordering_key, recipient))
$$;

REVOKE ALL ON FUNCTION herald._key_hash(text, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._key_hash(text, text) IS
  'Private: a message''s log partition key hash (ordering_key, else recipient).';
