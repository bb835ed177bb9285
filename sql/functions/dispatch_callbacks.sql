-- herald.dispatch_callbacks(max, now) — status callbacks: read up to `max` (1..10,000)
-- events of herald.log after the callbacks' consumer group (herald._callback_names),
-- enqueue the callback each event's producer wants (herald._callback_spec: a webhook
-- to its callback_url), owned by the callbacks' producer, and ack what it read, in
-- one transaction, so each event is queued once. When a producer's callbacks are
-- refused (class 22, 42501, 53400: its channel changed, or is open to other producers:
-- herald._check_callback_channel), its events are set aside in
-- herald.consumer_dead_letters with the error (herald.redispatch_callbacks sends them
-- later), and the others go out. Returns (events, callbacks, set_aside); zeros when no
-- producer has a callback_url or another call holds the group (SKIP LOCKED). Call it
-- again while events = max. Errors: 22V12 max, 42501 now. Locks: the group's offset
-- row, those of herald._enqueue. Index: log_statements_offset_idx, messages_pkey,
-- producers_pkey. SECURITY DEFINER for herald_worker.
CREATE OR REPLACE FUNCTION herald.dispatch_callbacks(max integer DEFAULT 1000, now timestamptz DEFAULT now())
RETURNS TABLE (events integer, callbacks integer, set_aside integer)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => dispatch_callbacks.now); -- first: a forged clock changes nothing
  v_group text := (herald._callback_names())."group";
  v_owner text := (herald._callback_names()).producer;
  v_after bigint;
  v_upto bigint;
  v_read integer;
  v_offsets bigint[];
  v_producers text[];
  v_specs herald.message_spec[];
  v_enqueued integer := 0;
  v_set_aside integer := 0;
  v_producer text;
  v_mine herald.message_spec[];
  v_error text;
BEGIN
  IF dispatch_callbacks.max IS NULL OR dispatch_callbacks.max NOT BETWEEN 1 AND 10000 THEN
    PERFORM herald._reject('22V12', 'max', format('%s is outside 1..10000', coalesce(dispatch_callbacks.max::text, 'NULL')));
  END IF;
  SELECT o.committed_offset INTO v_after FROM herald.consumer_offsets o
  WHERE o.group_name = v_group AND o.partition = 0
  FOR UPDATE SKIP LOCKED;
  IF v_after IS NULL THEN
    RETURN QUERY SELECT 0, 0, 0;
    RETURN;
  END IF;
  IF current_setting('transaction_isolation') = 'read committed' THEN
    PERFORM herald.log_sequence(10000);
  END IF;

  WITH e AS MATERIALIZED (SELECT * FROM herald._log_after(v_after, 1, 0, dispatch_callbacks.max))
  SELECT (SELECT count(*) FROM e), (SELECT max(e."offset") FROM e),
         array_agg(c."offset" ORDER BY c."offset"), array_agg(c.producer ORDER BY c."offset"),
         array_agg(c.spec ORDER BY c."offset")
  INTO v_read, v_upto, v_offsets, v_producers, v_specs
  FROM (SELECT e."offset", p.producer,
               herald._callback_spec(p => p, m => m, kind => e.kind, "offset" => e."offset", at => e.at) AS spec
        FROM e
        JOIN herald.messages m ON m.id = e.message_id
        JOIN herald.producers p ON p.producer = m.producer) AS c
  WHERE c.spec IS DISTINCT FROM NULL; -- (IS NOT NULL of a row asks that every field be set)

  IF v_specs IS NOT NULL THEN
    BEGIN
      PERFORM herald._check_callback_channel(channel => c.channel) FROM (SELECT DISTINCT s.channel FROM unnest(v_specs) AS s) AS c;
      PERFORM herald._enqueue(specs => v_specs, now => dispatch_callbacks.now, single => false, as_producer => v_owner);
      v_enqueued := cardinality(v_specs);
    EXCEPTION WHEN data_exception OR insufficient_privilege OR configuration_limit_exceeded THEN
      FOR v_producer IN SELECT DISTINCT u.p FROM unnest(v_producers) AS u (p) LOOP
        v_mine := ARRAY(SELECT v_specs[i] FROM generate_subscripts(v_producers, 1) AS i
                        WHERE v_producers[i] = v_producer ORDER BY i);
        BEGIN
          PERFORM herald._check_callback_channel(channel => (v_mine[1]).channel);
          PERFORM herald._enqueue(specs => v_mine, now => dispatch_callbacks.now, single => false, as_producer => v_owner);
          v_enqueued := v_enqueued + cardinality(v_mine);
        EXCEPTION WHEN data_exception OR insufficient_privilege OR configuration_limit_exceeded THEN
          GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT;
          INSERT INTO herald.consumer_dead_letters
            (group_name, partition, "offset", message_id, kind, channel, at, detail, error, dead_at)
          SELECT v_group, 0, e."offset", e.message_id, e.kind, e.channel, e.at, e.detail,
                 left(format('callback to producer %s refused: %s', v_producer, v_error), 2000), dispatch_callbacks.now
          FROM herald._log_after(v_after, 1, 0, dispatch_callbacks.max) AS e
          WHERE e."offset" = ANY (ARRAY(SELECT v_offsets[i] FROM generate_subscripts(v_producers, 1) AS i
                                        WHERE v_producers[i] = v_producer));
          v_set_aside := v_set_aside + cardinality(v_mine);
        END;
      END LOOP;
    END;
  END IF;

  IF v_upto IS NOT NULL THEN
    UPDATE herald.consumer_offsets o
    SET committed_offset = v_upto, updated_at = dispatch_callbacks.now
    WHERE o.group_name = v_group AND o.partition = 0;
  END IF;
  RETURN QUERY SELECT v_read, v_enqueued, v_set_aside;
END
$$;

REVOKE ALL ON FUNCTION herald.dispatch_callbacks(integer, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.dispatch_callbacks(integer, timestamptz) TO herald_worker, herald_admin;
COMMENT ON FUNCTION herald.dispatch_callbacks(integer, timestamptz) IS
  'Status callbacks: turn the log events of producers with a callback_url into signed webhooks to it, each event once.';
