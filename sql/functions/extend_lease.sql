-- herald.extend_lease(ids, lease_tokens, lease, now) — push lease_expires_at of
-- messages still held to now + lease; returns how many rows changed.
--
-- A worker whose send is slow calls it before the lease runs out so the reaper does
-- not hand the message to someone else. Only rows still 'processing' under the same
-- lease_token change; a lower count means the lease was already lost (the caller must
-- not complete those: its complete would change nothing anyway).
-- Index: the primary key, one probe per id (status is implied by the lease token;
-- see herald.complete). Locks: row locks on the changed rows.
-- Errors: 22V12 ids/lease_tokens (NULL or lengths differ), lease (outside 1 second..1 day).
-- SECURITY DEFINER for herald_worker.
CREATE OR REPLACE FUNCTION herald.extend_lease(
  ids bigint[],
  lease_tokens bigint[],
  lease interval,
  now timestamptz DEFAULT now()
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => extend_lease.now); -- first: a forged clock changes nothing
  changed integer;
BEGIN
  PERFORM herald._check_arrays(ARRAY['ids', 'lease_tokens'],
    ARRAY[cardinality(ids), cardinality(lease_tokens)], 2);
  IF lease IS NULL OR lease NOT BETWEEN interval '1 second' AND interval '1 day' THEN
    PERFORM herald._reject('22V12', 'lease', format('%s is outside 1 second..1 day', coalesce(lease::text, 'NULL')));
  END IF;

  UPDATE herald.messages m
  SET lease_expires_at = extend_lease.now + extend_lease.lease
  FROM unnest(ids, lease_tokens) AS u(id, lease_token)
  WHERE m.id = u.id
    AND m.lease_token = u.lease_token; -- a lease token exists only while processing (messages_lease_when_processing)
  GET DIAGNOSTICS changed = ROW_COUNT;
  RETURN changed;
END
$$;

REVOKE ALL ON FUNCTION herald.extend_lease(bigint[], bigint[], interval, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.extend_lease(bigint[], bigint[], interval, timestamptz) TO herald_worker, herald_admin;
COMMENT ON FUNCTION herald.extend_lease(bigint[], bigint[], interval, timestamptz) IS
  'Extend the lease of messages still held under their token.';
