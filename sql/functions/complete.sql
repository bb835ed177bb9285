-- herald.complete(ids, lease_tokens, provider_message_ids, now) — mark delivered
-- messages sent, storing each provider message id as the receipt (one over 255
-- characters is no provider's id but a receiver's header: not kept); returns how many
-- rows changed. Only rows still processing under the same lease_token change: a lower
-- count means a lease was lost (log it as a possible duplicate delivery). A repeat
-- changes nothing. Each changed row gets a 'sent' log event in the same statement, one
-- herald.log_statements row in id order whose receipts and attempts are typed arrays
-- (readers build the JSON detail).
-- Index: the primary key, one probe per id; status is not tested (the token implies
-- processing), which keeps the planner off messages_in_flight_idx.
-- Locks: the changed rows; ROW EXCLUSIVE on herald.log_statements.
-- Errors: 22V12 ids/lease_tokens NULL, or an array whose length differs from ids.
-- The single-id overload returns true when the row changed. SECURITY DEFINER for
-- herald_worker; the array form always takes the generic plan.
CREATE OR REPLACE FUNCTION herald.complete(
  ids bigint[],
  lease_tokens bigint[],
  provider_message_ids text[] DEFAULT NULL,
  now timestamptz DEFAULT now()
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan -- see claim_batch
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => complete.now); -- first: a forged clock changes nothing
  changed integer;
  v_ordered bigint[];
BEGIN
  PERFORM herald._check_arrays(ARRAY['ids', 'lease_tokens', 'provider_message_ids'],
    ARRAY[cardinality(ids), cardinality(lease_tokens), cardinality(provider_message_ids)], 2);

  WITH sent AS (
    UPDATE herald.messages m
    SET status = 'sent',
        finished_at = complete.now,
        provider_message_id = CASE WHEN length(u.provider_message_id) <= 255 THEN u.provider_message_id END,
        lease_token = NULL,
        lease_expires_at = NULL
    FROM unnest(ids, lease_tokens, provider_message_ids) AS u(id, lease_token, provider_message_id)
    WHERE m.id = u.id
      AND m.lease_token = u.lease_token -- a lease token exists only while processing (messages_lease_when_processing)
    RETURNING m.id, m.channel, m.recipient, m.ordering_key, m.provider_message_id, m.attempts
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes,
                                       provider_message_ids, attempts)
    SELECT 'sent', complete.now, array_agg(s.id), array_agg(s.channel),
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

CREATE OR REPLACE FUNCTION herald.complete(
  id bigint,
  lease_token bigint,
  provider_message_id text DEFAULT NULL,
  now timestamptz DEFAULT now()
) RETURNS boolean
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT herald._check_not_null(ARRAY['id', 'lease_token'], ARRAY[id IS NOT NULL, lease_token IS NOT NULL]);
  SELECT herald.complete(ids => ARRAY[id], lease_tokens => ARRAY[lease_token],
                         provider_message_ids => ARRAY[provider_message_id], now => now) = 1
$$;

REVOKE ALL ON FUNCTION herald.complete(bigint[], bigint[], text[], timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION herald.complete(bigint, bigint, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.complete(bigint[], bigint[], text[], timestamptz) TO herald_worker, herald_admin;
GRANT EXECUTE ON FUNCTION herald.complete(bigint, bigint, text, timestamptz) TO herald_worker, herald_admin;
COMMENT ON FUNCTION herald.complete(bigint[], bigint[], text[], timestamptz) IS
  'Mark delivered messages sent, only under their lease token; returns how many changed.';
COMMENT ON FUNCTION herald.complete(bigint, bigint, text, timestamptz) IS
  'Mark one delivered message sent, only under its lease token.';
