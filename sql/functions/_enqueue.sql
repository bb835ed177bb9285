-- herald._enqueue(specs, now, single) — the one writer of herald.messages: check and
-- store messages and their 'accepted' log event, all or nothing; ids in input order.
-- Ids are drawn first, one nextval per message in input order. One INSERT checks every
-- row with herald._valid (recipients matched once for the call through
-- herald._recipient_list_kind) and skips repeated idempotency keys (ON CONFLICT on
-- messages_idempotency_key_idx; a key repeated within the call: the first wins).
-- Fewer rows than messages: herald._validate names the first bad one (COLUMN
-- 'messages[i].field', or 'field' when single) and the error undoes the call;
-- otherwise the rest were repeats, answered with the stored ids (herald._idempotent_id;
-- 40001 when a REPEATABLE READ snapshot cannot see them). The log row holds the
-- stored messages in id order; offsets come later (herald.log_sequence).
-- Callers check the batch size. A concurrent insert of the same key makes this wait.
-- Locks: ROW EXCLUSIVE on herald.messages and herald.log_statements.
CREATE OR REPLACE FUNCTION herald._enqueue(specs herald.message_spec[], now timestamptz, single boolean)
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
  n integer := cardinality(specs);
  v_ids bigint[];
  v_channels text[];
  v_hashes integer[];
  v_list text;
  v_keyed boolean;
  v_kind text;
  v_stored bigint;
  v_logged bigint[];
  i integer;
BEGIN
  SELECT array_agg(nextval('herald.messages_id_seq')), array_agg(s.channel),
         array_agg(herald._key_hash(ordering_key => s.ordering_key, recipient => s.recipient)),
         string_agg(coalesce(s.recipient, ''), E'\n'), bool_or(s.idempotency_key IS NOT NULL)
  INTO v_ids, v_channels, v_hashes, v_list, v_keyed
  FROM unnest(specs) AS s;
  v_kind := herald._recipient_list_kind(list => v_list, n => n);

  INSERT INTO herald.messages AS m
    (id, channel, recipient, payload, metadata, priority, run_at, ordering_key,
     idempotency_key, max_attempts, created_at)
  SELECT v_ids[s.ord], c.name, s.recipient, s.payload, s.metadata, coalesce(s.priority, 0),
         coalesce(s.run_at, _enqueue.now), s.ordering_key, s.idempotency_key,
         coalesce(s.max_attempts, c.max_attempts), _enqueue.now
  FROM unnest(specs) WITH ORDINALITY
         AS s (channel, recipient, payload, run_at, priority, idempotency_key, ordering_key, max_attempts, metadata, ord)
  JOIN herald.channels c ON c.name = s.channel
  WHERE herald._valid(kind => c.kind, max_payload_bytes => c.max_payload_bytes, recipient => s.recipient,
                      payload => s.payload, run_at => s.run_at, priority => s.priority,
                      max_attempts => s.max_attempts, metadata => s.metadata,
                      idempotency_key => s.idempotency_key, ordering_key => s.ordering_key,
                      now => _enqueue.now,
                      checked_kind => v_kind)
  ORDER BY s.ord
  ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING;
  GET DIAGNOSTICS v_stored = ROW_COUNT;

  v_logged := v_ids;
  IF v_stored < n THEN
    FOR i IN 1 .. n LOOP
      PERFORM herald._validate(spec => specs[i], now => _enqueue.now,
                               field_prefix => CASE WHEN single THEN '' ELSE format('messages[%s].', i - 1) END);
    END LOOP;
    IF NOT v_keyed THEN
      RAISE EXCEPTION 'herald: herald._valid refused a message that herald._validate accepts'
        USING ERRCODE = 'XX000';
    END IF;
    SELECT array_agg(m.id ORDER BY m.id), array_agg(m.channel ORDER BY m.id),
           array_agg(herald._key_hash(ordering_key => m.ordering_key, recipient => m.recipient) ORDER BY m.id)
    INTO v_logged, v_channels, v_hashes
    FROM herald.messages m WHERE m.id = ANY (v_ids);
    FOR i IN 1 .. n LOOP
      IF (specs[i]).idempotency_key IS NOT NULL THEN
        v_ids[i] := herald._idempotent_id(key => (specs[i]).idempotency_key);
      END IF;
    END LOOP;
  END IF;

  IF v_stored > 0 THEN
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
    VALUES ('accepted', _enqueue.now, v_logged, v_channels, v_hashes);
  END IF;
  RETURN v_ids;
END
$$;

REVOKE ALL ON FUNCTION herald._enqueue(herald.message_spec[], timestamptz, boolean) FROM PUBLIC;
COMMENT ON FUNCTION herald._enqueue(herald.message_spec[], timestamptz, boolean) IS
  'Private: the one writer of herald.messages (check, store, log ''accepted''), behind every enqueue function.';
