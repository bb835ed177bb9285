-- herald.enqueue_batch(messages jsonb, now) — store many notifications given as a JSON
-- array (1 to 10,000 objects with the fields of herald.enqueue; run_at an ISO 8601
-- string; null = absent), all or nothing; returns their ids in input order.
-- Errors name the first bad element, COLUMN 'messages[<i>].<field>' (i from 0): 22V01–
-- 22V10, 22V17, 22V19 and 42501 priority as herald.enqueue, 22V11 for messages (not an array, empty,
-- too long), messages[i] (not an object) and messages[i].<field> (unknown, or of the
-- wrong JSON type; a run_at that is not a timestamp is 22V05, expires_at 22V17, a
-- priority that is not an integer 22V06, max_attempts 22V07).
-- Reading: a batch of plain elements (exactly channel, recipient and payload, the
-- first two strings) is proved so and read in one pass, one jsonb comparison and three
-- lookups per element; any other batch is checked with one SQL/JSON path and a key
-- check and read with jsonb_populate_recordset; failing that, or when a value does not
-- convert, herald._message_specs reads it element by element and names the bad one.
-- Then herald._enqueue. SECURITY DEFINER for herald_producer. Locks: as enqueue.
CREATE OR REPLACE FUNCTION herald.enqueue_batch(messages jsonb, now timestamptz DEFAULT now())
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  n integer;
  specs herald.message_spec[];
  v_plain boolean;
BEGIN
  IF messages IS NULL OR jsonb_typeof(messages) <> 'array' THEN
    PERFORM herald._reject(code => '22V11', field => 'messages', message => 'must be a JSON array of message objects');
  END IF;
  n := jsonb_array_length(messages);
  IF n = 0 OR n > 10000 THEN
    PERFORM herald._reject(code => '22V11', field => 'messages', message => format('has %s elements; 1 to 10000 are allowed', n));
  END IF;

  -- The usual batch: every element an object of exactly channel, recipient and payload,
  -- the first two strings, read as it is proved so. jsonb orders objects by their
  -- number of members first, so `< R` (R: four members) holds for objects of at most
  -- three, and ?& then proves the three keys.
  SELECT array_agg(ROW(e ->> 'channel', e ->> 'recipient', nullif(e -> 'payload', 'null'),
                       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::herald.message_spec),
         bool_and(coalesce(e < '{"": null, "a": null, "b": null, "c": null}'
                           AND e ?& '{channel,recipient,payload}'
                           AND jsonb_typeof(e -> 'channel') = 'string'
                           AND jsonb_typeof(e -> 'recipient') = 'string', false))
  INTO specs, v_plain
  FROM (SELECT jsonb_path_query(messages, 'strict $[*]') AS e) AS elements;

  IF NOT v_plain THEN
    specs := NULL;
    -- Any other batch: every element an object of known fields, each of a JSON type it
    -- takes (strings: the texts and run_at; numbers or strings: the integers; null:
    -- absent; in lax mode a missing field gives no item, and .type() does not unwrap an
    -- array), read by jsonb_populate_recordset, which may still refuse a value.
    IF NOT messages @? 'lax $[*] ? (@.type() != "object"
          || (@.channel.type() != "string" && @.channel.type() != "null")
          || (@.recipient.type() != "string" && @.recipient.type() != "null")
          || (@.run_at.type() != "string" && @.run_at.type() != "null")
          || (@.expires_at.type() != "string" && @.expires_at.type() != "null")
          || (@.idempotency_key.type() != "string" && @.idempotency_key.type() != "null")
          || (@.ordering_key.type() != "string" && @.ordering_key.type() != "null")
          || (@.recipient_zone.type() != "string" && @.recipient_zone.type() != "null")
          || (@.priority.type() != "number" && @.priority.type() != "string" && @.priority.type() != "null")
          || (@.max_attempts.type() != "number" && @.max_attempts.type() != "string" && @.max_attempts.type() != "null"))'
       AND NOT EXISTS (SELECT FROM (SELECT jsonb_path_query(messages, 'lax $[*]') AS e) AS elements
                       WHERE e - '{channel,recipient,payload,run_at,priority,idempotency_key,ordering_key,max_attempts,metadata,expires_at,recipient_zone}'::text[] <> '{}') THEN
      BEGIN
        specs := ARRAY(SELECT jsonb_populate_recordset(NULL::herald.message_spec, messages));
      EXCEPTION WHEN data_exception THEN
        specs := NULL; -- a run_at or an integer that does not convert: named below
      END;
    END IF;
  END IF;

  IF specs IS NULL THEN
    specs := herald._message_specs(messages => messages);
  END IF;
  RETURN herald._enqueue(specs => specs, now => enqueue_batch.now, single => false);
END
$$;

REVOKE ALL ON FUNCTION herald.enqueue_batch(jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.enqueue_batch(jsonb, timestamptz) TO herald_producer, herald_admin;
COMMENT ON FUNCTION herald.enqueue_batch(jsonb, timestamptz) IS
  'Store many notifications given as a JSON array, all or nothing; ids in input order; errors name messages[i].field.';
