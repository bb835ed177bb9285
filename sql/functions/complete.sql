-- herald.complete(ids, lease_tokens, provider_message_ids, now) — mark delivered
-- messages sent (herald._mark_sent), storing each provider message id as the receipt
-- (one over 255 characters is no provider's id but a receiver's header: not kept);
-- returns how many rows changed. Only rows still processing under the same lease_token
-- change: a lower count means a lease was lost (log it as a possible duplicate
-- delivery). A repeat changes nothing. Each changed row gets a 'sent' log event.
-- Index: the primary key, one probe per id; status is not tested (the token implies
-- processing), which keeps the planner off messages_in_flight_idx.
-- Locks: the changed rows; ROW EXCLUSIVE on herald.log_statements.
-- Errors: 22V12 ids/lease_tokens NULL, a NULL token, or an array whose length differs.
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
BEGIN
  PERFORM herald._check_arrays(ARRAY['ids', 'lease_tokens', 'provider_message_ids'],
    ARRAY[cardinality(ids), cardinality(lease_tokens), cardinality(provider_message_ids)], 2);
  IF array_position(lease_tokens, NULL) IS NOT NULL THEN -- NULL would mean, to _mark_sent, a message not leased
    PERFORM herald._reject('22V12', 'lease_tokens', 'a lease token is NULL');
  END IF;
  RETURN herald._mark_sent(ids => ids, lease_tokens => lease_tokens, provider_message_ids => provider_message_ids,
                           now => complete.now);
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
