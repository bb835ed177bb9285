-- herald._mark_sent(ids, lease_tokens, provider_message_ids, now) — the one way a
-- message becomes 'sent'; returns how many did. A row changes when it is processing
-- under its lease_token (a runner's report), or, for a NULL token, when it waits for a
-- retry (queued, tried at least once: a provider's report says an earlier attempt went
-- through). Sets finished_at, the provider id (the one given, when 255 characters or
-- fewer, else the one a provider's report stored), clears the lease; a 'sent' log
-- event per row in the same statement (one log_statements row, in id order); then the
-- next message of each ordering key is released and log readers woken. Called by
-- complete, fail, reap_stale and record_delivery_events. Index: the primary key, a
-- probe per id. Locks: the changed rows; ROW EXCLUSIVE on herald.log_statements.
CREATE OR REPLACE FUNCTION herald._mark_sent(
  ids bigint[],
  lease_tokens bigint[],
  provider_message_ids text[],
  now timestamptz
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET plan_cache_mode = force_generic_plan -- see claim_batch
AS $$
DECLARE
  changed integer;
  v_ordered bigint[];
BEGIN
  WITH sent AS (
    UPDATE herald.messages m
    SET status = 'sent',
        finished_at = _mark_sent.now,
        provider_message_id = coalesce(CASE WHEN length(u.provider_message_id) <= 255 THEN u.provider_message_id END,
                                       m.provider_message_id),
        lease_token = NULL,
        lease_expires_at = NULL
    FROM unnest(ids, lease_tokens, provider_message_ids) AS u(id, lease_token, provider_message_id)
    WHERE m.id = u.id
      AND CASE WHEN u.lease_token IS NULL THEN m.status = 'queued' AND m.attempts > 0
               ELSE m.lease_token = u.lease_token END -- a lease token exists only while processing
    RETURNING m.id, m.channel, m.recipient, m.ordering_key, m.provider_message_id, m.attempts
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes,
                                       provider_message_ids, attempts)
    SELECT 'sent', _mark_sent.now, array_agg(s.id), array_agg(s.channel),
           array_agg(herald._key_hash(s.ordering_key, s.recipient)),
           CASE WHEN count(s.provider_message_id) > 0 THEN array_agg(s.provider_message_id) END,
           array_agg(s.attempts)
    -- Sorted once, below the aggregate, instead of once per array_agg(… ORDER BY):
    -- the arrays are filled from the same rows in the same order.
    FROM (SELECT * FROM sent ORDER BY id) s
    HAVING count(*) > 0
  )
  SELECT count(*), array_agg(s.id) FILTER (WHERE s.ordering_key IS NOT NULL) INTO changed, v_ordered FROM sent s;
  IF v_ordered IS NOT NULL THEN
    PERFORM herald._release_after(ids => v_ordered);
  END IF;
  IF changed > 0 THEN
    PERFORM herald._notify(ARRAY['herald_log']);
  END IF;
  RETURN changed;
END
$$;

REVOKE ALL ON FUNCTION herald._mark_sent(bigint[], bigint[], text[], timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._mark_sent(bigint[], bigint[], text[], timestamptz) IS
  'Private: mark messages sent (under their lease token, or waiting for a retry), log it, release their ordering keys.';
