-- herald._message_specs(messages) — the elements of an enqueue_batch array as message
-- specs, read one by one: raises 22V11 for an element that is not an object
-- ('messages[i]'), an unknown field or a text field that is not a JSON string
-- ('messages[i].field'), 22V05 / 22V17 for a run_at / expires_at that is not a timestamp string, 22V06 /
-- 22V07 for a priority / max_attempts that is not an integer. The values themselves
-- are checked later by herald._enqueue. enqueue_batch's path when its one SQL/JSON
-- test refuses the batch; tests compare the two. Locks: none.
CREATE OR REPLACE FUNCTION herald._message_specs(messages jsonb)
RETURNS herald.message_spec[]
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
  specs herald.message_spec[] := '{}';
  item jsonb;
  p text;
  k text;
  i integer;
BEGIN
  FOR i IN 1 .. jsonb_array_length(messages) LOOP
    item := messages -> (i - 1);
    p := format('messages[%s]', i - 1);
    IF jsonb_typeof(item) <> 'object' THEN
      PERFORM herald._reject(code => '22V11', field => p, message => 'must be a JSON object');
    END IF;
    FOR k IN SELECT jsonb_object_keys(item) LOOP
      IF k NOT IN ('channel', 'recipient', 'payload', 'run_at', 'priority', 'idempotency_key',
                   'ordering_key', 'max_attempts', 'metadata', 'expires_at', 'recipient_zone') THEN
        PERFORM herald._reject(code => '22V11', field => p || '.' || k, message => 'is not a message field',
          hint => 'fields: channel, recipient, payload, run_at, priority, idempotency_key, ordering_key, max_attempts, metadata, expires_at, recipient_zone');
      END IF;
    END LOOP;
    specs[i] := ROW(herald._json_text(item => item, key => 'channel', prefix => p, code => '22V11'),
                    herald._json_text(item => item, key => 'recipient', prefix => p, code => '22V11'),
                    nullif(item -> 'payload', 'null'),
                    herald._json_timestamptz(item => item, key => 'run_at', prefix => p, code => '22V05'),
                    herald._json_integer(item => item, key => 'priority', prefix => p, code => '22V06'),
                    herald._json_text(item => item, key => 'idempotency_key', prefix => p, code => '22V11'),
                    herald._json_text(item => item, key => 'ordering_key', prefix => p, code => '22V11'),
                    herald._json_integer(item => item, key => 'max_attempts', prefix => p, code => '22V07'),
                    nullif(item -> 'metadata', 'null'),
                    herald._json_timestamptz(item => item, key => 'expires_at', prefix => p, code => '22V17'),
                    herald._json_text(item => item, key => 'recipient_zone', prefix => p, code => '22V11'))::herald.message_spec;
  END LOOP;
  RETURN specs;
END
$$;

REVOKE ALL ON FUNCTION herald._message_specs(jsonb) FROM PUBLIC;
COMMENT ON FUNCTION herald._message_specs(jsonb) IS
  'Private: read enqueue_batch elements one by one, naming the first of the wrong shape.';
