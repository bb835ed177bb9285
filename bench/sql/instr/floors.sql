-- floors.sql — what a single enqueue costs before herald's own rules, step by step, for
-- bench/instructions.sh -f: each function adds one part of herald.enqueue's shape to
-- the one before (docs/performance.md, "Where a single enqueue's instructions go").
-- Scratch functions in schema public of the bench database; not part of herald.

-- A SECURITY DEFINER PL/pgSQL function around the bare INSERT … VALUES.
CREATE FUNCTION public.floor_values(channel text, recipient text, payload jsonb) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE v_id bigint;
BEGIN
  INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at)
  VALUES ('bench', channel, recipient, payload, now(), 5, now(), now() + interval '5 days') RETURNING id INTO v_id;
  RETURN v_id;
END $$;

-- … and the 'accepted' log row.
CREATE FUNCTION public.floor_logged(channel text, recipient text, payload jsonb) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE v_id bigint;
BEGIN
  INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at)
  VALUES ('bench', channel, recipient, payload, now(), 5, now(), now() + interval '5 days') RETURNING id INTO v_id;
  INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
  VALUES ('accepted', now(), ARRAY[v_id], ARRAY[channel], ARRAY[hashtext(recipient)]);
  RETURN v_id;
END $$;

-- … with the channel joined and herald._valid checked (INSERT … SELECT of one row).
CREATE FUNCTION public.floor_checked(p_channel text, p_recipient text, p_payload jsonb) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE v_id bigint := nextval('herald.messages_id_seq');
BEGIN
  INSERT INTO herald.messages (id, producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at)
  SELECT v_id, 'bench', c.name, p_recipient, p_payload, now(), c.max_attempts, now(), now() + c.ttl
  FROM herald.channels c
  WHERE c.name = p_channel
    AND herald._valid(kind => c.kind, max_payload_bytes => c.max_payload_bytes, recipient => p_recipient,
                      payload => p_payload, run_at => NULL, priority => 0, max_attempts => NULL, metadata => NULL,
                      idempotency_key => NULL, ordering_key => NULL, expires_at => NULL, now => now());
  INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
  VALUES ('accepted', now(), ARRAY[v_id], ARRAY[p_channel], ARRAY[hashtext(p_recipient)]);
  RETURN v_id;
END $$;

-- … in the one-writer shape: a thin entry point hands a herald.message_spec[] to a
-- private set-based writer (unnest joined to herald.channels).
CREATE FUNCTION public.floor_writer(specs herald.message_spec[], now timestamptz) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE v_id bigint := nextval('herald.messages_id_seq');
BEGIN
  INSERT INTO herald.messages (id, producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at)
  SELECT v_id, 'bench', c.name, s.recipient, s.payload, floor_writer.now, c.max_attempts, floor_writer.now,
         floor_writer.now + c.ttl
  FROM unnest(specs) WITH ORDINALITY AS s
  JOIN herald.channels c ON c.name = s.channel
  WHERE herald._valid(kind => c.kind, max_payload_bytes => c.max_payload_bytes, recipient => s.recipient,
                      payload => s.payload, run_at => s.run_at, priority => s.priority, max_attempts => s.max_attempts,
                      metadata => s.metadata, idempotency_key => s.idempotency_key, ordering_key => s.ordering_key,
                      expires_at => s.expires_at, now => floor_writer.now);
  INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
  VALUES ('accepted', now, ARRAY[v_id], ARRAY[(specs[1]).channel], ARRAY[hashtext((specs[1]).recipient)]);
  RETURN v_id;
END $$;
CREATE FUNCTION public.floor_one_writer(channel text, recipient text, payload jsonb, now timestamptz DEFAULT now()) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  RETURN public.floor_writer(ARRAY[ROW(channel, recipient, payload, NULL, 0, NULL, NULL, NULL, NULL, NULL)::herald.message_spec], now);
END $$;
