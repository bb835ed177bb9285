-- herald._store_valid(channels, recipients, payloads, metadata, priorities, run_ats,
-- ordering_keys, max_attempts, now, checked_kind) — the key-less writer
-- (herald._store_batch calls it for a call without idempotency keys, herald._store
-- for key-less messages already validated): validate and insert messages
-- without idempotency keys (parallel arrays, one element per message; NULL arrays or
-- elements take the defaults: priority 0, run_at now, the channel's max_attempts)
-- and their 'accepted' log events; returns their ids in input order, or '{}' when a
-- message is bad.
--
-- It stores exactly the elements that pass herald._valid (inlined: the rules of
-- herald._validate) for a known channel. When one fails it returns '{}' and writes no
-- log event: the caller compares the result's length with its input and must then
-- raise (herald._validate names the element and field), which undoes the messages
-- this call stored. One pass instead of a check pass and an insert pass.
-- Ids are drawn from the identity sequence first, one nextval per message in input
-- order, so ascending id order is input order; unique and increasing within the call,
-- not gapless. The same statement takes the log's key hashes (herald._key_hash), in
-- input order too (release 11: one statement for both, 100,000 instructions less per
-- 100 messages than two). With the ids known before the INSERT, its events are the
-- input arrays themselves: the 'accepted' row (migration 005; offsets given after
-- commit by herald.log_sequence) is one more INSERT with no RETURNING and no sort,
-- which cost 200 µs per 100 messages when the events were aggregated from a
-- data-modifying CTE (bench/cpucost.sh).
-- Two forms of the INSERT (release 11). A call whose messages all name one channel
-- and leave every optional array NULL — the usual bulk send, and enqueue_batch's
-- plain elements — reads that channel's row once (no join per message) and passes
-- the optional fields as NULL constants, which fold herald._valid's rules for them
-- away when the statement is planned: about 200,000 instructions less per 100
-- e-mails (callgrind). With the statement above, enqueue_many(100) 4,998,202 →
-- 4,672,004 (bench/instructions.sh -p, release 10's and 11's trees). Any other
-- call joins each message to its channel (a hash of herald.channels), as before.
-- checked_kind is what herald._recipient_list_kind said of the recipients joined by
-- newlines (the caller asks it once per call: enqueue_batch needs the answer itself):
-- the kind whose expression every recipient matched, so herald._valid skips the
-- per-row match for rows of that kind and keeps every other rule: 690,000 → 180,000
-- instructions per 100 e-mail addresses (callgrind); NULL matches row by row. The
-- caller must not name a kind the recipients were not matched against.
-- The arrays are read by unnest in a select list, not in FROM: there a multi-array
-- unnest is one function scan per array, each copying its elements into a tuple
-- store and reading them back (nine stores of 100 rows for a batch of 100); in a
-- select list the unnests advance in step, element i of each array in row i, an
-- array shorter or NULL giving NULLs — the same rows, as they are produced:
-- 5.60 M → 5.31 M instructions per 100 messages (callgrind). The ids and key
-- hashes are taken the same way, in input order (no ordinality, no sort).
-- Locks: ROW EXCLUSIVE on herald.messages and herald.log_statements.
CREATE OR REPLACE FUNCTION herald._store_valid(
  channels text[],
  recipients text[],
  payloads jsonb[],
  metadata jsonb[],
  priorities integer[],
  run_ats timestamptz[],
  ordering_keys text[],
  max_attempts integer[],
  now timestamptz,
  checked_kind text
) RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
  n integer := coalesce(cardinality(channels), 0);
  v_ids bigint[];
  v_hashes integer[];
  stored bigint;
BEGIN
  IF n = 0 THEN
    RETURN '{}';
  END IF;
  -- The ids and the log's key hashes in one pass, in input order.
  SELECT array_agg(nextval('herald.messages_id_seq')), array_agg(herald._key_hash(u.ordering_key, u.recipient))
  INTO v_ids, v_hashes
  FROM (SELECT unnest(ordering_keys) AS ordering_key, unnest(recipients) AS recipient) AS u;

  IF metadata IS NULL AND priorities IS NULL AND run_ats IS NULL AND ordering_keys IS NULL
     AND max_attempts IS NULL AND channels[1] = ALL (channels) THEN
    -- The usual bulk call: one channel, every optional field at its default. The
    -- channel's row is read once (no join per message), and the optional fields are
    -- constants, so their rules of herald._valid fold away when it is planned.
    INSERT INTO herald.messages AS m (id, channel, recipient, payload, run_at, max_attempts, created_at)
    SELECT u.id, c.name, u.recipient, u.payload, _store_valid.now, c.max_attempts, _store_valid.now
    FROM herald.channels c,
         (SELECT unnest(v_ids) AS id, unnest(recipients) AS recipient, unnest(payloads) AS payload) AS u
    WHERE c.name = channels[1]
      AND herald._valid(c.kind, c.max_payload_bytes, u.recipient, u.payload, NULL, NULL, NULL, NULL, NULL,
                        NULL, _store_valid.now, _store_valid.checked_kind);
  ELSE
    INSERT INTO herald.messages AS m
      (id, channel, recipient, payload, metadata, priority, run_at, ordering_key,
       max_attempts, created_at)
    SELECT u.id, c.name, u.recipient, u.payload, u.metadata,
           coalesce(u.priority, 0), coalesce(u.run_at, _store_valid.now), u.ordering_key,
           coalesce(u.max_attempts, c.max_attempts), _store_valid.now
    FROM (SELECT unnest(v_ids) AS id, unnest(channels) AS channel, unnest(recipients) AS recipient,
                 unnest(payloads) AS payload, unnest(metadata) AS metadata, unnest(priorities) AS priority,
                 unnest(run_ats) AS run_at, unnest(ordering_keys) AS ordering_key,
                 unnest(max_attempts) AS max_attempts) AS u
    JOIN herald.channels c ON c.name = u.channel
    WHERE herald._valid(c.kind, c.max_payload_bytes, u.recipient, u.payload, u.run_at, u.priority,
                        u.max_attempts, u.metadata, NULL, u.ordering_key, _store_valid.now,
                        _store_valid.checked_kind);
  END IF;
  GET DIAGNOSTICS stored = ROW_COUNT;
  IF stored < n THEN -- a bad message: no 'accepted' row
    RETURN '{}';
  END IF;

  INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
  VALUES ('accepted', _store_valid.now, v_ids, channels, v_hashes);
  RETURN v_ids;
END
$$;

REVOKE ALL ON FUNCTION herald._store_valid(text[], text[], jsonb[], jsonb[], integer[], timestamptz[], text[], integer[], timestamptz, text) FROM PUBLIC;
