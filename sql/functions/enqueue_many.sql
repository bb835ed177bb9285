-- herald.enqueue_many(channels, recipients, payloads, run_ats, priorities,
-- idempotency_keys, ordering_keys, max_attempts, metadata, expires_ats, recipient_zones,
-- now) — store many
-- notifications given as parallel arrays (element i of each is message i), all or
-- nothing; returns their ids in input order. For drivers that send arrays in the
-- binary protocol (nothing to parse). channels, recipients and payloads are required;
-- an optional array may be NULL (all defaults) or hold NULLs (that message's default).
-- Errors: 22V11 channels (NULL, empty or over 10,000), 22V11 <array> (length differs
-- from channels'); a bad message: 22V01–22V10, 22V17, 22V19, 42501 priority with COLUMN
-- 'messages[<i>].<field>' (i from 0). Rules, defaults and idempotency as herald.enqueue (herald._enqueue).
-- SECURITY DEFINER for herald_producer. Locks: as herald.enqueue.
CREATE OR REPLACE FUNCTION herald.enqueue_many(
  channels text[],
  recipients text[],
  payloads jsonb[],
  run_ats timestamptz[] DEFAULT NULL,
  priorities integer[] DEFAULT NULL,
  idempotency_keys text[] DEFAULT NULL,
  ordering_keys text[] DEFAULT NULL,
  max_attempts integer[] DEFAULT NULL,
  metadata jsonb[] DEFAULT NULL,
  expires_ats timestamptz[] DEFAULT NULL,
  recipient_zones text[] DEFAULT NULL,
  now timestamptz DEFAULT now()
) RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  n integer := coalesce(cardinality(channels), 0);
BEGIN
  IF n = 0 OR n > 10000 THEN
    PERFORM herald._reject(code => '22V11', field => 'channels', message => format('has %s elements; 1 to 10000 messages are allowed', n));
  END IF;
  PERFORM herald._check_arrays(
    fields => ARRAY['channels', 'recipients', 'payloads', 'run_ats', 'priorities', 'idempotency_keys',
                    'ordering_keys', 'max_attempts', 'metadata', 'expires_ats', 'recipient_zones'],
    lengths => ARRAY[n, cardinality(recipients), cardinality(payloads), cardinality(run_ats),
                     cardinality(priorities), cardinality(idempotency_keys), cardinality(ordering_keys),
                     cardinality(max_attempts), cardinality(metadata), cardinality(expires_ats),
                     cardinality(recipient_zones)],
    required => 3, code => '22V11');
  RETURN herald._enqueue(
    specs => ARRAY(SELECT ROW(u.c, u.r, u.p, u.ra, u.pr, u.ik, u.ok, u.ma, u.md, u.ea, u.rz)::herald.message_spec
                   FROM (SELECT unnest(channels) AS c, unnest(recipients) AS r, unnest(payloads) AS p,
                                unnest(run_ats) AS ra, unnest(priorities) AS pr, unnest(idempotency_keys) AS ik,
                                unnest(ordering_keys) AS ok, unnest(max_attempts) AS ma,
                                unnest(metadata) AS md, unnest(expires_ats) AS ea,
                                unnest(recipient_zones) AS rz) AS u),
    now => enqueue_many.now,
    single => false);
END
$$;

REVOKE ALL ON FUNCTION herald.enqueue_many(text[], text[], jsonb[], timestamptz[], integer[], text[], text[], integer[], jsonb[], timestamptz[], text[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.enqueue_many(text[], text[], jsonb[], timestamptz[], integer[], text[], text[], integer[], jsonb[], timestamptz[], text[], timestamptz)
  TO herald_producer, herald_admin;
COMMENT ON FUNCTION herald.enqueue_many(text[], text[], jsonb[], timestamptz[], integer[], text[], text[], integer[], jsonb[], timestamptz[], text[], timestamptz) IS
  'Store many notifications given as parallel arrays, all or nothing; ids in input order.';
