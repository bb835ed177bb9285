-- herald._enqueue(specs, now, single, as_producer) — the one writer of herald.messages:
-- store messages and their 'accepted' log event, all or nothing; ids in input order
-- (`now` other than now() is herald_admin's). Each belongs to as_producer (status
-- callbacks) or herald._producer(), on a channel open to it; its herald.producers row
-- gives the most urgent priority (none: 0; above 0 the default), the from it may set,
-- and 53400 'producer' when at max_pending, suspended (unless all are repeats) or past
-- its send_limit (herald._spend_producer). A repeated idempotency key (herald._repeats)
-- is answered with the first id, not stored; 22V20 if its channel, recipient or payload
-- (jsonb) differ, after its own input errors. expires_at: least(spec's, due + ttl). With
-- quiet_per_recipient, due at the end of the recipient's quiet hours. Suppressed
-- recipients are stored 'suppressed' (a log event); one behind a pending message of its
-- ordering key 'held'. Stored where herald._valid holds, else herald._validate names the
-- first bad one (COLUMN 'messages[i].field' or 'field'); then herald._spend_recipients
-- (53400 'recipient'). REPEATABLE READ: a repeat committed after the snapshot is 23505.
-- Locks: ROW EXCLUSIVE on messages, log_statements; the helpers'. Index: producers_pkey.
CREATE OR REPLACE FUNCTION herald._enqueue(specs herald.message_spec[], now timestamptz, single boolean,
                                          as_producer text DEFAULT NULL)
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => _enqueue.now); -- first: a forged clock changes nothing
  n integer := cardinality(specs);
  v_ids bigint[];
  v_channels text[];
  v_hashes integer[];
  v_list text;
  v_keyed boolean;
  v_ordered boolean;
  v_held boolean[];
  v_kind text;
  v_skip bigint[] := '{}';
  v_specs herald.message_spec[] := specs;
  v_first bigint[];
  v_valid boolean := true;
  v_conflict integer; -- the index in v_skip of a repeat whose key names another notification
  v_stored bigint;
  v_logged bigint[];
  v_logged_channels text[];
  v_logged_hashes integer[];
  v_barred bigint[];
  v_policy herald.producers; -- the producer's row, or what a producer without one gets
  v_full boolean; -- at its max_pending when last counted, or suspended (NULL: no bound)
  v_suppressing boolean;
  v_limiting boolean; -- a channel has a recipient_limit or range_limit
  i integer;
BEGIN
  v_policy.producer := coalesce(as_producer, herald._producer());
  SELECT EXISTS (SELECT FROM herald.suppressions), EXISTS (SELECT FROM herald.channels c WHERE c.recipient_limit > 0 OR c.range_limit > 0),
         coalesce(p.min_priority, 0), p.senders, p.send_limit, p.send_window,
         p.pending >= p.max_pending OR p.suspended_until > _enqueue.now
  INTO v_suppressing, v_limiting, v_policy.min_priority, v_policy.senders, v_policy.send_limit, v_policy.send_window, v_full
  FROM (SELECT) AS one LEFT JOIN herald.producers p ON p.producer = v_policy.producer;
  IF n = 1 THEN -- the same values without starting a query (a single enqueue's cost)
    v_ids := ARRAY[nextval('herald.messages_id_seq')];
    v_channels := ARRAY[(specs[1]).channel];
    v_hashes := ARRAY[herald._key_hash(ordering_key => (specs[1]).ordering_key, recipient => (specs[1]).recipient)];
    v_keyed := (specs[1]).idempotency_key IS NOT NULL;
    v_ordered := (specs[1]).ordering_key IS NOT NULL;
  ELSE
    SELECT array_agg(nextval('herald.messages_id_seq')), array_agg(s.channel),
           array_agg(herald._key_hash(ordering_key => s.ordering_key, recipient => s.recipient)),
           string_agg(coalesce(s.recipient, ''), E'\n'), bool_or(s.idempotency_key IS NOT NULL),
           bool_or(s.ordering_key IS NOT NULL)
    INTO v_ids, v_channels, v_hashes, v_list, v_keyed, v_ordered
    FROM unnest(specs) AS s;
    v_kind := herald._recipient_list_kind(list => v_list, n => n); -- (one recipient: _valid matches it)
  END IF;

  IF v_keyed THEN
    SELECT r.positions, r.first_ids, r.valid INTO v_skip, v_first, v_valid
    FROM herald._repeats(specs => specs, policy => v_policy, ids => v_ids, now => _enqueue.now) AS r;
    v_skip := coalesce(v_skip, '{}');
    IF cardinality(v_skip) > 0 AND v_valid THEN -- a repeat carries what the message it repeats does
      SELECT min(r.i) INTO v_conflict
      FROM unnest(v_skip, v_first) WITH ORDINALITY AS r (pos, first_id, i)
      LEFT JOIN herald.messages m ON m.id = r.first_id -- stored; else one of this call
      WHERE ((specs[r.pos]).channel, (specs[r.pos]).recipient, (specs[r.pos]).payload) IS DISTINCT FROM
            (coalesce(m.channel, (specs[array_position(v_ids, r.first_id)]).channel),
             coalesce(m.recipient, (specs[array_position(v_ids, r.first_id)]).recipient),
             coalesce(m.payload, (specs[array_position(v_ids, r.first_id)]).payload));
      IF v_conflict IS NOT NULL THEN
        PERFORM herald._reject(code => '22V20',
          field => CASE WHEN single THEN '' ELSE format('messages[%s].', v_skip[v_conflict] - 1) END || 'idempotency_key',
          message => format('%L was used for message %s, with another channel, recipient or payload',
                            (specs[v_skip[v_conflict]]).idempotency_key, v_first[v_conflict]),
          hint => 'a key names one notification: a retry sends the same one; give another notification its own key');
      END IF;
    END IF;
    FOR i IN 1 .. cardinality(v_skip) LOOP
      v_specs[v_skip[i]] := NULL; -- a NULL spec joins no channel: not inserted
    END LOOP;
  END IF;

  IF v_full AND cardinality(v_skip) < n THEN -- repeats store nothing: they are answered
    PERFORM CASE WHEN p.suspended_until > _enqueue.now
      THEN herald._reject(code => '53400', field => 'producer',
        message => format('producer %L is suspended until %s: %s', p.producer, p.suspended_until, p.suspended_reason),
        hint => 'fix the list it sends to; an admin may end it early (herald.producers.suspended_until)')
      ELSE herald._reject(code => '53400', field => 'producer',
        message => format('producer %L had %s unfinished messages at %s, at its max_pending of %s', p.producer, p.pending,
                          p.counted_at, p.max_pending),
        hint => 'retry once the backlog has been sent (herald.count_producers counts again); an admin raises herald.producers.max_pending')
      END
    FROM herald.producers p WHERE p.producer = v_policy.producer;
  END IF;

  IF v_suppressing THEN -- the input positions of suppressed recipients, repeats left out
    SELECT array_agg(s.ordinality) INTO v_barred
    FROM unnest(specs) WITH ORDINALITY AS s
    JOIN herald.channels c ON c.name = s.channel
    WHERE NOT s.ordinality = ANY (v_skip)
      AND EXISTS (SELECT FROM herald._suppression(kind => c.kind, recipient => s.recipient, now => _enqueue.now));
  END IF;

  IF v_ordered THEN
    v_held := herald._held(specs => v_specs, producer => v_policy.producer, barred => v_barred);
  END IF;

  INSERT INTO herald.messages AS m
    (id, producer, channel, recipient, recipient_zone, payload, metadata, priority, run_at, ordering_key,
     idempotency_key, max_attempts, created_at, expires_at, status, finished_at)
  SELECT v_ids[s.ordinality], v_policy.producer, c.name, s.recipient, s.recipient_zone, s.payload, s.metadata,
         coalesce(s.priority, greatest(v_policy.min_priority, 0)),
         coalesce(CASE WHEN c.quiet_per_recipient
                       THEN herald._quiet_end(quiet_from => c.quiet_from, quiet_until => c.quiet_until, quiet_days => c.quiet_days,
                                              quiet_zone => c.quiet_zone, at => greatest(s.run_at, _enqueue.now),
                                              recipient_zone => s.recipient_zone)
                  END, greatest(s.run_at, _enqueue.now)), s.ordering_key, s.idempotency_key,
         coalesce(s.max_attempts, c.max_attempts), _enqueue.now,
         least(s.expires_at, greatest(s.run_at, _enqueue.now) + c.ttl),
         CASE WHEN s.ordinality = ANY (v_barred) THEN 'suppressed' WHEN v_held[s.ordinality] THEN 'held' ELSE 'queued' END,
         CASE WHEN s.ordinality = ANY (v_barred) THEN _enqueue.now END
  FROM unnest(v_specs) WITH ORDINALITY AS s
  JOIN herald.channels c ON c.name = s.channel
  WHERE herald._valid(kind => c.kind, max_payload_bytes => c.max_payload_bytes, max_segments => c.max_segments, max_recipients => c.max_recipients, recipient => s.recipient,
                      payload => s.payload, run_at => s.run_at, priority => s.priority, policy => v_policy,
                      channel_producers => c.producers, channel_prefixes => c.recipient_prefixes,
                      max_attempts => s.max_attempts, metadata => s.metadata,
                      idempotency_key => s.idempotency_key, ordering_key => s.ordering_key,
                      expires_at => s.expires_at, recipient_zone => s.recipient_zone, now => _enqueue.now,
                      checked_kind => v_kind);
  GET DIAGNOSTICS v_stored = ROW_COUNT;

  IF v_stored + cardinality(v_skip) < n OR NOT v_valid THEN
    FOR i IN 1 .. n LOOP
      CONTINUE WHEN v_valid AND i = ANY (v_skip); -- a repeat: checked above
      PERFORM herald._validate(spec => specs[i], policy => v_policy, now => _enqueue.now,
                               field_prefix => CASE WHEN single THEN '' ELSE format('messages[%s].', i - 1) END);
    END LOOP;
    RAISE EXCEPTION 'herald: herald._valid refused a message that herald._validate accepts'
      USING ERRCODE = 'XX000';
  END IF;
  IF v_limiting AND v_stored > 0 THEN
    PERFORM herald._spend_recipients(specs => v_specs, barred => v_barred, single => single, now => _enqueue.now);
  END IF;
  IF v_policy.send_limit IS NOT NULL AND v_stored > coalesce(cardinality(v_barred), 0) THEN -- suppressed cost nothing
    PERFORM herald._spend_producer(policy => v_policy, n => (v_stored - coalesce(cardinality(v_barred), 0))::integer,
                                   now => _enqueue.now);
  END IF;

  IF cardinality(v_skip) > 0 THEN
    SELECT array_agg(v_ids[o]), array_agg(v_channels[o]), array_agg(v_hashes[o])
    INTO v_logged, v_logged_channels, v_logged_hashes
    FROM generate_series(1, n) AS o WHERE NOT o = ANY (v_skip);
  END IF;
  IF v_stored > 0 THEN
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
    VALUES ('accepted', _enqueue.now, coalesce(v_logged, v_ids), coalesce(v_logged_channels, v_channels),
            coalesce(v_logged_hashes, v_hashes));
  END IF;
  IF v_barred IS NOT NULL AND v_stored > 0 THEN -- ids follow input order
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
    SELECT 'suppressed', _enqueue.now, array_agg(v_ids[o] ORDER BY o), array_agg(v_channels[o] ORDER BY o),
           array_agg(v_hashes[o] ORDER BY o)
    FROM unnest(v_barred) AS o;
  END IF;
  FOR i IN 1 .. cardinality(v_skip) LOOP
    v_ids[v_skip[i]] := v_first[i];
  END LOOP;
  RETURN v_ids;
END
$$;

REVOKE ALL ON FUNCTION herald._enqueue(herald.message_spec[], timestamptz, boolean, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._enqueue(herald.message_spec[], timestamptz, boolean, text) IS
  'Private: the one writer of herald.messages (check, store, log ''accepted''), behind every enqueue function.';
