-- herald._store(channels, recipients, payloads, metadata, priorities, run_ats,
-- ordering_keys, idempotency_keys, max_attempts, now) — insert already validated
-- messages (parallel arrays, one element per message; NULL arrays or elements take
-- the defaults, as in herald._store_valid: priority 0, run_at now, the channel's
-- max_attempts) and their 'accepted' log events;
-- returns their ids in input order. The writer of herald.enqueue's keyed path, of
-- herald._store_batch's calls with idempotency keys and of enqueue_batch's
-- element-by-element path; key-less bulk calls validate and store in one statement
-- through herald._store_valid instead.
--
-- Without any idempotency key it hands the messages to herald._store_valid, with
-- the recipients' kind asked of herald._recipient_list_kind once for the call. With
-- keys, ids come from the identity sequence first, so that the result is in input
-- order; they are unique and increasing within the call, not gapless.
-- The events go to herald.log_statements in the same statement as the messages (a
-- data-modifying CTE), as one row holding them all in id order (migration 005),
-- without touching any shared row: offsets are
-- given after commit by herald.log_sequence (README, "The ordered log").
-- ON CONFLICT on messages_idempotency_key_idx only when some element has a key: the
-- speculative insertion it needs costs on every row (measured: half the throughput
-- of a single-row enqueue). A key that exists, or repeats within the call, gives the
-- first message's id (herald._idempotent_id; 40001 when it is invisible to a
-- REPEATABLE READ snapshot).
-- Locks: ROW EXCLUSIVE on herald.messages and herald.log_statements.
CREATE OR REPLACE FUNCTION herald._store(
  channels text[],
  recipients text[],
  payloads jsonb[],
  metadata jsonb[],
  priorities integer[],
  run_ats timestamptz[],
  ordering_keys text[],
  idempotency_keys text[],
  max_attempts integer[],
  now timestamptz
) RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
  n integer := cardinality(channels);
  v_ids bigint[];
  inserted integer;
  i integer;
  list text;
BEGIN
  IF NOT EXISTS (SELECT FROM unnest(idempotency_keys) k WHERE k IS NOT NULL) THEN
    -- No key, no conflict possible: the key-less writer. The messages passed
    -- herald._validate, so herald._valid passes them too (a test keeps the two in
    -- agreement); were it ever stricter, refuse rather than store part of them.
    list := array_to_string(recipients, E'\n', ''); -- a variable, so that the call is inlined
    v_ids := herald._store_valid(channels, recipients, payloads, metadata, priorities, run_ats,
                                 ordering_keys, max_attempts, _store.now,
                                 herald._recipient_list_kind(list, n));
    IF cardinality(v_ids) <> n THEN
      RAISE EXCEPTION 'herald: herald._valid rejected a message that herald._validate accepts'
        USING ERRCODE = 'XX000';
    END IF;
    RETURN v_ids;
  END IF;

  v_ids := ARRAY(SELECT nextval('herald.messages_id_seq') FROM generate_series(1, n));
  WITH stored AS (
    INSERT INTO herald.messages AS m
      (id, channel, recipient, payload, metadata, priority, run_at, ordering_key,
       idempotency_key, max_attempts, created_at)
    SELECT u.id, u.channel, u.recipient, u.payload, u.metadata, coalesce(u.priority, 0),
           coalesce(u.run_at, _store.now), u.ordering_key, u.idempotency_key, coalesce(u.max_attempts, c.max_attempts), _store.now
    FROM (SELECT unnest(v_ids) AS id, unnest(channels) AS channel, unnest(recipients) AS recipient,
                 unnest(payloads) AS payload, unnest(metadata) AS metadata, unnest(priorities) AS priority,
                 unnest(run_ats) AS run_at, unnest(ordering_keys) AS ordering_key,
                 unnest(idempotency_keys) AS idempotency_key, unnest(max_attempts) AS max_attempts) AS u
    JOIN herald.channels c ON c.name = u.channel
    ORDER BY u.id -- a key repeated within the call: the first element wins
    ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING m.id, m.channel, m.recipient, m.ordering_key
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
    SELECT 'accepted', _store.now, array_agg(s.id ORDER BY s.id), array_agg(s.channel ORDER BY s.id),
           array_agg(herald._key_hash(s.ordering_key, s.recipient) ORDER BY s.id)
    FROM stored s
    HAVING count(*) > 0
  )
  SELECT count(*) INTO inserted FROM stored;

  IF inserted < n THEN
    -- Some keys existed, or repeated within this call: answer with the first ids.
    FOR i IN 1 .. n LOOP
      IF idempotency_keys[i] IS NOT NULL THEN
        v_ids[i] := herald._idempotent_id(idempotency_keys[i]);
      END IF;
    END LOOP;
  END IF;
  RETURN v_ids;
END
$$;

REVOKE ALL ON FUNCTION herald._store(text[], text[], jsonb[], jsonb[], integer[], timestamptz[], text[], text[], integer[], timestamptz) FROM PUBLIC;
