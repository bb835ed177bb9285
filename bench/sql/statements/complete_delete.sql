-- bench.complete_delete(ids, lease_tokens, provider_message_ids, now) — a PROTOTYPE
-- for bench/statements.sh, not part of herald and never installed by a migration:
-- herald.complete (release 13) with the UPDATE to 'sent' replaced by a DELETE of the
-- row. It keeps the fencing (lease token match) and the receipt (the 'sent' event in
-- herald.log_statements, with the same details), so it measures what a
-- delete-on-complete design (docs/decisions.md, "pgmq is compared…") would save.
-- What it gives up, and why herald does not do it: herald.status and the HTTP GET of
-- a sent message, the idempotency key of a sent message (a repeat would be stored
-- and sent again), herald.throughput and herald.purge's view of sent rows.
CREATE SCHEMA IF NOT EXISTS bench;

CREATE OR REPLACE FUNCTION bench.complete_delete(
  ids bigint[],
  lease_tokens bigint[],
  provider_message_ids text[] DEFAULT NULL,
  now timestamptz DEFAULT now()
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  changed integer;
BEGIN
  PERFORM herald._check_arrays(ARRAY['ids', 'lease_tokens', 'provider_message_ids'],
    ARRAY[cardinality(ids), cardinality(lease_tokens), cardinality(provider_message_ids)], 2);

  WITH sent AS (
    DELETE FROM herald.messages m
    USING unnest(ids, lease_tokens, provider_message_ids) AS u(id, lease_token, provider_message_id)
    WHERE m.id = u.id
      AND m.lease_token = u.lease_token
    RETURNING m.id, m.channel, m.recipient, m.ordering_key, u.provider_message_id, m.attempts
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes,
                                       provider_message_ids, attempts)
    SELECT 'sent', complete_delete.now, array_agg(s.id), array_agg(s.channel),
           array_agg(herald._key_hash(s.ordering_key, s.recipient)),
           CASE WHEN count(s.provider_message_id) > 0 THEN array_agg(s.provider_message_id) END,
           array_agg(s.attempts)
    FROM (SELECT * FROM sent ORDER BY id) s
    HAVING count(*) > 0
  )
  SELECT count(*) INTO changed FROM sent;
  IF changed > 0 THEN
    PERFORM herald._notify(ARRAY['herald_log']);
  END IF;
  RETURN changed;
END
$$;
