-- herald._store_valid(channels, recipients, payloads, metadata, priorities, run_ats,
-- ordering_keys, max_attempts, now) — the key-less writer (herald.enqueue_many calls it
-- directly, herald._store for key-less messages): validate and insert messages
-- without idempotency keys (parallel arrays, one element per message; NULL arrays or
-- elements take the defaults: priority 0, run_at now, the channel's max_attempts)
-- and their 'accepted' log events, in one statement; returns the ids of the messages
-- it stored, in input order.
--
-- It stores exactly the elements that pass herald._valid (inlined: the rules of
-- herald._validate) for a known channel, so the caller compares the result's length
-- with its input: when it is shorter, some element is bad, and the caller must raise
-- (herald._validate names the element and field), which undoes this insert with the
-- rest of the statement. One pass instead of a check pass and an insert pass.
-- Ids: nextval in input order (the planner evaluates a volatile select-list
-- expression after the ORDER BY), so ascending id order is input order; unique and
-- increasing within the call, not gapless.
-- The events go to herald.log_statements in the same statement, one row holding them all
-- in id order (migration 005); offsets are given after commit by herald.log_sequence.
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
  now timestamptz
) RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
  v_ids bigint[];
BEGIN
  WITH stored AS (
    INSERT INTO herald.messages AS m
      (id, channel, recipient, payload, metadata, priority, run_at, ordering_key,
       max_attempts, created_at)
    SELECT nextval('herald.messages_id_seq'), c.name, u.recipient, u.payload, u.metadata,
           coalesce(u.priority, 0), coalesce(u.run_at, _store_valid.now), u.ordering_key,
           coalesce(u.max_attempts, c.max_attempts), _store_valid.now
    FROM unnest(channels, recipients, payloads, metadata, priorities, run_ats, ordering_keys,
                max_attempts) WITH ORDINALITY
         AS u(channel, recipient, payload, metadata, priority, run_at, ordering_key, max_attempts, pos)
    JOIN herald.channels c ON c.name = u.channel
    WHERE herald._valid(c.kind, c.max_payload_bytes, u.recipient, u.payload, u.run_at, u.priority,
                        u.max_attempts, u.metadata, NULL, u.ordering_key, _store_valid.now)
    ORDER BY u.pos
    RETURNING m.id, m.channel, m.recipient, m.ordering_key
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
    SELECT 'accepted', _store_valid.now, array_agg(s.id ORDER BY s.id), array_agg(s.channel ORDER BY s.id),
           array_agg(herald._key_hash(s.ordering_key, s.recipient) ORDER BY s.id)
    FROM stored s
    HAVING count(*) > 0
  )
  SELECT array_agg(s.id ORDER BY s.id) INTO v_ids FROM stored s;
  RETURN coalesce(v_ids, '{}');
END
$$;

REVOKE ALL ON FUNCTION herald._store_valid(text[], text[], jsonb[], jsonb[], integer[], timestamptz[], text[], integer[], timestamptz) FROM PUBLIC;
