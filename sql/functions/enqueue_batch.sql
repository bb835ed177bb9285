-- herald.enqueue_batch(messages jsonb) — store many notifications at once, all or
-- nothing; returns their ids in input order.
--
-- `messages` is a JSON array (1 to 10,000 elements) of objects with the fields of
-- herald.enqueue: channel, recipient, payload (required), run_at (ISO 8601 string),
-- priority, idempotency_key, ordering_key, max_attempts (integers / strings),
-- metadata (object). null is the same as an absent field.
-- Errors name the first bad element: COLUMN = 'messages[<index>].<field>' (index from
-- 0), with the SQLSTATEs of herald._validate (HR001–HR010), plus
--   HR011 messages                not an array, empty, or over 10,000 elements
--   HR011 messages[i]             an element that is not an object
--   HR011 messages[i].<field>     an unknown field, or a field of the wrong JSON type
--                                 (a run_at that is not a timestamp is HR005,
--                                 a non-integer priority HR006, max_attempts HR007)
-- The fast path: one pass over the elements gives each one's shape
-- (herald._item_shape: 0 at most three members, unchecked; 1 optional fields of the
-- right types; 2 anything else) and takes out channel, recipient and payload (->>
-- and -> never raise, whatever the element). When no element is of shape 2, the
-- recipients are matched against one kind's expression as a single list
-- (herald._recipient_list_kind, whose answer herald._valid then uses); a match
-- also proves every recipient a JSON string (no number, boolean, array or object
-- reads as an address, a phone number or a URL), and channel names start with a
-- letter, so only a channel of true or false is read from a non-string. Otherwise
-- one SQL/JSON path over the batch tests that every channel and recipient is a
-- string. Then, for shape 1 only, a second pass takes out the optional fields, and
-- herald._store_batch checks the values and stores them (one INSERT without
-- idempotency keys). A batch the fast path refuses (a bad value, a field of the
-- wrong JSON type, an unknown field: see herald._item_shape) goes element by
-- element, which raises the error of the first bad element; herald._store writes
-- the batches that path accepts (those with a run_at). Were that path ever to
-- accept a batch the fast path stored part of and refused, it raises XX000 instead.
-- Reading the JSON costs about 5,400 instructions an element over enqueue_many's
-- work from arrays (release 10; release 9 6,200, release 8 12,200; callgrind, 100
-- e-mails, bench/instructions.sh -p). Either way nothing
-- is written when an element is bad, statement triggers fire once, and the
-- 'accepted' events are written in the same statement. Idempotency as in
-- herald.enqueue; a key repeated within the batch gives the first element's id.
-- SECURITY DEFINER for herald_producer. Locks: ROW EXCLUSIVE on herald.messages.
CREATE OR REPLACE FUNCTION herald.enqueue_batch(messages jsonb, now timestamptz DEFAULT now())
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  n integer;
  item jsonb;
  p text;
  k text;
  v_channels text[];
  v_recipients text[];
  v_payloads jsonb[];
  v_run_ats timestamptz[];
  v_priorities integer[];
  v_idem text[];
  v_order text[];
  v_max integer[];
  v_meta jsonb[];
  shape integer;
  list text;
  checked_kind text;
  v_ids bigint[];
  refused boolean := false;
  i integer;
BEGIN
  IF messages IS NULL OR jsonb_typeof(messages) <> 'array' THEN
    PERFORM herald._reject('HR011', 'messages', 'must be a JSON array of message objects');
  END IF;
  n := jsonb_array_length(messages);
  IF n = 0 OR n > 10000 THEN
    PERFORM herald._reject('HR011', 'messages', format('has %s elements; 1 to 10000 are allowed', n));
  END IF;

  -- The shape of every element (the largest: herald._item_shape) and the three
  -- fields every message has, in one pass over the elements in order: the SQL/JSON
  -- path's items, handed out one at a time in the select list (jsonb_array_elements
  -- in FROM would first copy every element into a tuple store, 800 instructions an
  -- element more). The optional fields of shape 1 are the ones the second pass
  -- below takes out: a field added to the message goes into both, or the fast path
  -- would drop it.
  SELECT max(herald._item_shape(e)), array_agg(e ->> 'channel'), array_agg(e ->> 'recipient'),
         array_agg(e -> 'payload')
  INTO shape, v_channels, v_recipients, v_payloads
  FROM (SELECT jsonb_path_query(messages, 'strict $[*]') AS e) AS elements;
  IF shape < 2 THEN
    list := array_to_string(v_recipients, E'\n', ''); -- a variable, so that the call is inlined
    checked_kind := herald._recipient_list_kind(list, n);
    -- Shape 0 leaves the JSON types of channel and recipient to this test.
    IF (checked_kind IS NOT NULL AND NOT v_channels && '{true,false}')
       OR NOT messages @? 'strict $[*] ? ((@.channel starts with "" && @.recipient starts with "") is unknown)' THEN
      IF shape = 1 THEN
        SELECT array_agg(nullif(e -> 'metadata', 'null')), array_agg((e ->> 'priority')::integer),
               array_agg(e ->> 'ordering_key'), array_agg(e ->> 'idempotency_key'),
               array_agg((e ->> 'max_attempts')::integer)
        INTO v_meta, v_priorities, v_order, v_idem, v_max
        FROM (SELECT jsonb_path_query(messages, 'strict $[*]') AS e) AS elements;
      END IF;
      v_ids := herald._store_batch(v_channels, v_recipients, v_payloads, NULL, v_priorities, v_idem,
                                   v_order, v_max, v_meta, now, checked_kind);
      IF cardinality(v_ids) = n THEN
        RETURN v_ids;
      END IF;
      refused := true; -- the element-by-element path raises; what was stored goes with it
    END IF;
  END IF;

  -- Element by element: the path that names the first bad element and field.
  FOR i IN 1 .. n LOOP
    item := messages -> (i - 1);
    p := format('messages[%s]', i - 1);
    IF jsonb_typeof(item) <> 'object' THEN
      PERFORM herald._reject('HR011', p, 'must be a JSON object');
    END IF;
    FOR k IN SELECT jsonb_object_keys(item) LOOP
      IF k NOT IN ('channel', 'recipient', 'payload', 'run_at', 'priority', 'idempotency_key',
                   'ordering_key', 'max_attempts', 'metadata') THEN
        PERFORM herald._reject('HR011', p || '.' || k, 'is not a message field',
          hint => 'fields: channel, recipient, payload, run_at, priority, idempotency_key, ordering_key, max_attempts, metadata');
      END IF;
    END LOOP;

    v_channels[i] := herald._json_text(item, 'channel', p, 'HR011');
    v_recipients[i] := herald._json_text(item, 'recipient', p, 'HR011');
    v_payloads[i] := nullif(item -> 'payload', 'null');
    v_meta[i] := nullif(item -> 'metadata', 'null');
    v_idem[i] := herald._json_text(item, 'idempotency_key', p, 'HR011');
    v_order[i] := herald._json_text(item, 'ordering_key', p, 'HR011');
    v_run_ats[i] := herald._json_timestamptz(item, 'run_at', p, 'HR005');
    v_priorities[i] := herald._json_integer(item, 'priority', p, 'HR006');
    v_max[i] := herald._json_integer(item, 'max_attempts', p, 'HR007');

    v_max[i] := herald._validate(v_channels[i], v_recipients[i], v_payloads[i], v_run_ats[i], v_priorities[i],
                                 v_max[i], v_meta[i], v_idem[i], v_order[i], now, p || '.');
  END LOOP;
  IF refused THEN
    RAISE EXCEPTION 'herald: the fast path refused a batch that the element-by-element path accepts'
      USING ERRCODE = 'XX000';
  END IF;
  RETURN herald._store(v_channels, v_recipients, v_payloads, v_meta, v_priorities, v_run_ats,
                       v_order, v_idem, v_max, now);
END
$$;

REVOKE ALL ON FUNCTION herald.enqueue_batch(jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.enqueue_batch(jsonb, timestamptz) TO herald_producer, herald_admin;
