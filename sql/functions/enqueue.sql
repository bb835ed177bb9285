-- herald.enqueue(channel, recipient, payload, …) — store one notification; returns its id.
--
-- Validation is herald._validate's rules (SQLSTATEs HR001–HR010, the field in the
-- error's COLUMN), shared with herald.enqueue_batch; nothing is stored on error.
-- Optional arguments:
--   run_at           when to send (NULL = now); future = scheduled
--   priority         -100..100, lower runs first (NULL or default: 0)
--   idempotency_key  a repeat returns the first message's id and stores nothing
--   ordering_key     messages with the same key are delivered one at a time, in id order
--   max_attempts     1..100 (NULL = the channel's max_attempts)
--   metadata         a JSON object kept with the message, not sent
--   now              the clock (tests pass a fixed time)
-- The hot path (no idempotency key) is one statement: INSERT … SELECT from the
-- channel's row WHERE herald._valid(…) (inlined), and the 'accepted' log event in a
-- data-modifying CTE of the same statement. When it stores nothing, the input is bad:
-- herald._validate then raises the error that names the field.
-- Idempotency (through herald._store): ON CONFLICT on messages_idempotency_key_idx; a
-- concurrent insert of the same key makes this call wait for it, then return its id. Under REPEATABLE READ or
-- SERIALIZABLE the winner may be invisible: 40001 serialization_failure (retry).
-- A statement of its own rather than a call of enqueue_batch: the hot path of every
-- producer, kept to one statement.
-- Runs inside the caller's transaction: the message exists once that commits.
-- SECURITY DEFINER: herald_producer may call it without table privileges.
-- Locks: ROW EXCLUSIVE on herald.messages and herald.log_statements.
CREATE OR REPLACE FUNCTION herald.enqueue(
  channel text,
  recipient text,
  payload jsonb,
  run_at timestamptz DEFAULT NULL,
  priority integer DEFAULT 0,
  idempotency_key text DEFAULT NULL,
  ordering_key text DEFAULT NULL,
  max_attempts integer DEFAULT NULL,
  metadata jsonb DEFAULT NULL,
  now timestamptz DEFAULT now()
) RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_max integer;
  v_id bigint;
BEGIN
  IF enqueue.idempotency_key IS NULL THEN
    -- No key, no conflict possible: a plain INSERT skips the speculative insertion
    -- that ON CONFLICT costs on every row.
    WITH stored AS (
      INSERT INTO herald.messages AS m
        (channel, recipient, payload, metadata, priority, run_at, ordering_key,
         max_attempts, created_at)
      SELECT c.name, enqueue.recipient, enqueue.payload, enqueue.metadata,
             coalesce(enqueue.priority, 0), coalesce(enqueue.run_at, enqueue.now), enqueue.ordering_key,
             coalesce(enqueue.max_attempts, c.max_attempts), enqueue.now
      FROM herald.channels c
      WHERE c.name = enqueue.channel
        AND herald._valid(c.kind, c.max_payload_bytes, enqueue.recipient, enqueue.payload, enqueue.run_at,
                          enqueue.priority, enqueue.max_attempts, enqueue.metadata, NULL,
                          enqueue.ordering_key, enqueue.now)
      RETURNING m.id, m.channel, m.recipient, m.ordering_key
    ), appended AS (
      INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
      SELECT 'accepted', enqueue.now, ARRAY[s.id], ARRAY[s.channel], ARRAY[herald._key_hash(s.ordering_key, s.recipient)]
      FROM stored s
    )
    SELECT s.id INTO v_id FROM stored s;
    IF v_id IS NOT NULL THEN
      RETURN v_id;
    END IF;
  END IF;

  -- With an idempotency key, or when the statement above found the input bad:
  -- _validate raises the error that names the field; herald._store then stores the
  -- message as a batch of one, with ON CONFLICT on the key and the first id for a
  -- repeat (without a key, were _valid ever stricter than _validate, it refuses with
  -- XX000).
  v_max := herald._validate(enqueue.channel, enqueue.recipient, enqueue.payload, enqueue.run_at,
                            enqueue.priority, enqueue.max_attempts, enqueue.metadata,
                            enqueue.idempotency_key, enqueue.ordering_key, enqueue.now, '');
  RETURN (herald._store(ARRAY[enqueue.channel], ARRAY[enqueue.recipient], ARRAY[enqueue.payload],
                        ARRAY[enqueue.metadata], ARRAY[enqueue.priority],
                        ARRAY[enqueue.run_at], ARRAY[enqueue.ordering_key],
                        ARRAY[enqueue.idempotency_key], ARRAY[v_max], enqueue.now))[1];
END
$$;

REVOKE ALL ON FUNCTION herald.enqueue(text, text, jsonb, timestamptz, integer, text, text, integer, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.enqueue(text, text, jsonb, timestamptz, integer, text, text, integer, jsonb, timestamptz)
  TO herald_producer, herald_admin;
