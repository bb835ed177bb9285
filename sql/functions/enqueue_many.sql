-- herald.enqueue_many(channels, recipients, payloads, run_ats, priorities,
-- idempotency_keys, ordering_keys, max_attempts, metadata, now) — store many
-- notifications given as parallel arrays (element i of each array is message i), all
-- or nothing; returns their ids in input order.
--
-- The bulk path for programs that hold their messages as values rather than JSON:
-- a driver sends the arrays in the binary protocol, so nothing is parsed out of a
-- JSON document (the Go runner's intake.EnqueueMany uses it). Same rules, defaults,
-- idempotency and log events as herald.enqueue_batch, through herald._store.
-- channels, recipients and payloads are required; the optional arrays may be NULL
-- (all defaults) or hold NULLs (that message's default).
-- Errors: HR011 channels (NULL, empty or over 10,000 elements), HR011 <array> (an
-- array whose length differs from channels'); a bad message raises the SQLSTATE of
-- herald._validate (HR001–HR010) with COLUMN = 'messages[<index>].<field>' (index
-- from 0), as enqueue_batch does. herald._store_batch checks and stores: without
-- idempotency keys in one statement (herald._store_valid); with keys, every message
-- is checked at once by herald._valid, then herald._store inserts them. Either way
-- the recipients of one kind are matched against its expression once for the call
-- (herald._recipient_list_kind).
-- Only when a message fails does herald._validate run element by element to name it.
-- SECURITY DEFINER for herald_producer. Locks: ROW EXCLUSIVE on herald.messages and
-- herald.log_statements.
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
  now timestamptz DEFAULT now()
) RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  n integer := coalesce(cardinality(channels), 0);
  names text[] := ARRAY['recipients', 'payloads', 'run_ats', 'priorities', 'idempotency_keys',
                        'ordering_keys', 'max_attempts', 'metadata'];
  lengths integer[] := ARRAY[cardinality(recipients), cardinality(payloads), cardinality(run_ats),
                             cardinality(priorities), cardinality(idempotency_keys),
                             cardinality(ordering_keys), cardinality(max_attempts), cardinality(metadata)];
  i integer;
  v_ids bigint[];
  list text;
BEGIN
  IF n = 0 OR n > 10000 THEN
    PERFORM herald._reject('HR011', 'channels', format('has %s elements; 1 to 10000 messages are allowed', n));
  END IF;
  IF lengths[1] IS NULL OR lengths[2] IS NULL OR n <> ANY (lengths) THEN
    -- Some array's length is wrong (one test for all; the loop only to name it).
    FOR i IN 1 .. cardinality(names) LOOP
      IF (i <= 2 AND lengths[i] IS NULL) OR lengths[i] <> n THEN
        PERFORM herald._reject('HR011', names[i],
          format('has %s elements but channels has %s', coalesce(lengths[i]::text, 'no'), n));
      END IF;
    END LOOP;
  END IF;

  -- Check and store (herald._store_batch), the recipients' syntax matched once for
  -- the call when they are of one kind; fewer ids than messages means a bad one,
  -- named below (the error undoes what was stored).
  -- (the list in a variable: passed as an expression, the argument it is used five
  -- times for would keep herald._recipient_list_kind from being inlined)
  list := array_to_string(recipients, E'\n', '');
  v_ids := herald._store_batch(channels, recipients, payloads, run_ats, priorities, idempotency_keys,
                               ordering_keys, max_attempts, metadata, enqueue_many.now,
                               herald._recipient_list_kind(list, n));
  IF cardinality(v_ids) = n THEN
    RETURN v_ids;
  END IF;

  -- Some message is bad: herald._validate names the first one and raises.
  FOR i IN 1 .. n LOOP
    PERFORM herald._validate(channels[i], recipients[i], payloads[i], run_ats[i], priorities[i],
                             max_attempts[i], metadata[i], idempotency_keys[i], ordering_keys[i],
                             enqueue_many.now, format('messages[%s].', i - 1));
  END LOOP;
  -- Only reached were herald._valid stricter than herald._validate (a test compares
  -- them): refuse the call rather than store part of it.
  RAISE EXCEPTION 'herald: herald._valid rejected a message of this call that herald._validate accepts'
    USING ERRCODE = 'XX000';
END
$$;

REVOKE ALL ON FUNCTION herald.enqueue_many(text[], text[], jsonb[], timestamptz[], integer[], text[], text[], integer[], jsonb[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.enqueue_many(text[], text[], jsonb[], timestamptz[], integer[], text[], text[], integer[], jsonb[], timestamptz)
  TO herald_producer, herald_admin;
