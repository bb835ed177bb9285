-- herald.record_delivery_events(source, events, now) — record what providers report
-- about messages. events: a JSON array of 1 to 10,000 objects {event_id (unique per
-- source), message_id (herald's, echoed back), provider_message_id, recipient, event
-- (processed, delivered, deferred, bounced, complained, unsubscribed, undelivered), type
-- (bounced: hard or soft), code, reason, at (default now)}. Each is stored once (a replay
-- changes nothing twice; processed only when it settles a send or matches nothing) and
-- matched by message_id when the stored provider id, if any, agrees (equal, or the
-- prefix before a '.') and recipient is absent, the message's, or a copy's (cc, bcc).
-- The message's own event: its outcome unless a graver one is there (processed none),
-- logged under its name; own or a copy's, a suppression when _suppression_reason says.
-- Settles sends: a message waiting for a retry is sent (herald._mark_sent); one being
-- sent keeps the provider id, which its report (fail, reap_stale) reads as sent.
-- Errors: 22V12 source; 22V18 events (COLUMN 'events' or 'events[i].<field>'). Index:
-- messages_pkey, channels_pkey, delivery_events_once, suppressions_pkey. SECURITY
-- DEFINER for herald_events. Locks: the messages and entries it changes.
CREATE OR REPLACE FUNCTION herald.record_delivery_events(source text, events jsonb, now timestamptz DEFAULT now())
RETURNS TABLE (recorded integer, duplicates integer, unknown integer)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  clock_ok boolean := herald._check_clock(now => record_delivery_events.now); -- first: a forged clock changes nothing
  fields constant text[] := '{event_id,message_id,provider_message_id,recipient,event,type,code,reason,at}';
  kinds constant text[] := '{processed,delivered,deferred,bounced,complained,unsubscribed,undelivered}';
  n integer;
  i integer;
  e jsonb;
  p text;
  k text;
  at_ok boolean := true;
  v_logged boolean;
  v_waiting bigint[];
  v_waiting_pids text[];
  v_noted bigint[];
  v_noted_pids text[];
BEGIN
  PERFORM herald._check_source(source => source);
  IF events IS NULL OR jsonb_typeof(events) <> 'array' OR jsonb_array_length(events) NOT BETWEEN 1 AND 10000 THEN
    PERFORM herald._reject(code => '22V18', field => 'events', message => 'must be a JSON array of 1 to 10000 event objects');
  END IF;
  n := jsonb_array_length(events);
  BEGIN -- every 'at' in one statement; the loop looks for the bad one only when there is one
    PERFORM max((x ->> 'at')::timestamptz) FROM jsonb_array_elements(events) AS x;
  EXCEPTION WHEN data_exception THEN
    at_ok := false;
  END;
  FOR i IN 0 .. n - 1 LOOP -- expressions only (no query) unless an event is refused
    e := events -> i;
    p := 'events[' || i || ']';
    IF jsonb_typeof(e) <> 'object' THEN
      PERFORM herald._reject(code => '22V18', field => p, message => 'must be a JSON object');
    END IF;
    IF e - fields <> '{}' THEN
      k := (SELECT min(f) FROM jsonb_object_keys(e - fields) AS f);
      PERFORM herald._reject(code => '22V18', field => p || '.' || k, message => 'is not an event field',
        hint => array_to_string(fields, ', '));
    END IF;
    IF jsonb_typeof(e -> 'event_id') IS DISTINCT FROM 'string' OR length(e ->> 'event_id') NOT BETWEEN 1 AND 255 THEN
      PERFORM herald._reject(code => '22V18', field => p || '.event_id', message => 'must be a string of 1 to 255 characters');
    END IF;
    IF NOT coalesce(e ->> 'event' = ANY (kinds), false) THEN -- only a JSON string reads as one of them
      PERFORM herald._reject(code => '22V18', field => p || '.event', message => 'must be one of the event names',
        hint => array_to_string(kinds, ', '));
    END IF;
    IF e ? 'message_id' AND (jsonb_typeof(e -> 'message_id') <> 'number' OR (e ->> 'message_id') !~ '^[0-9]{1,18}$') THEN
      PERFORM herald._reject(code => '22V18', field => p || '.message_id', message => 'must be a herald message id');
    END IF;
    FOREACH k IN ARRAY ARRAY['provider_message_id', 'recipient', 'code', 'reason'] LOOP
      IF e ? k AND jsonb_typeof(e -> k) NOT IN ('string', 'null') THEN
        PERFORM herald._reject(code => '22V18', field => p || '.' || k, message => 'must be a string');
      END IF;
    END LOOP;
    IF length(e ->> 'code') > 64 OR length(e ->> 'provider_message_id') > 255 OR length(e ->> 'recipient') NOT BETWEEN 1 AND 320 THEN
      PERFORM herald._reject(code => '22V18',
        field => p || '.' || CASE WHEN length(e ->> 'code') > 64 THEN 'code'
                                  WHEN length(e ->> 'provider_message_id') > 255 THEN 'provider_message_id' ELSE 'recipient' END,
        message => 'is too long (code: 64, provider_message_id: 255, recipient: 1 to 320 characters)');
    END IF;
    IF e ? 'type' AND ((e -> 'type') NOT IN ('"hard"', '"soft"') OR e ->> 'event' <> 'bounced') THEN
      PERFORM herald._reject(code => '22V18', field => p || '.type', message => 'must be hard or soft, for a bounced event');
    END IF;
    IF NOT at_ok AND e ? 'at' THEN
      BEGIN
        PERFORM (e ->> 'at')::timestamptz;
      EXCEPTION WHEN data_exception THEN
        PERFORM herald._reject(code => '22V18', field => p || '.at', message => 'must be a timestamp string');
      END;
    END IF;
  END LOOP;

  -- One statement: each event stored once, matched or not; then, from the stored rows
  -- (not read back from herald.delivery_events), the messages' outcomes, the receipts
  -- in the log and the suppressions.
  WITH input AS (
    SELECT x ->> 'event_id' AS event_id, (x ->> 'message_id')::bigint AS message_id,
           x ->> 'provider_message_id' AS provider_message_id, x ->> 'recipient' AS recipient, x ->> 'event' AS event,
           CASE WHEN x ->> 'event' = 'bounced' THEN coalesce(x ->> 'type', 'hard') END AS type,
           x ->> 'code' AS code, left(x ->> 'reason', 500) AS reason,
           coalesce((x ->> 'at')::timestamptz, record_delivery_events.now) AS at
    FROM jsonb_array_elements(events) AS x
  ), stored AS (
    INSERT INTO herald.delivery_events AS d (source, event_id, message_id, recipient, event, type, code, reason, at, received_at)
    SELECT source, i.event_id, m.id, i.recipient, i.event, i.type, i.code, i.reason, i.at, record_delivery_events.now
    FROM input i
    LEFT JOIN herald.messages m -- the message, when the event is about it or one of its copies
      ON m.id = i.message_id
     AND (i.provider_message_id IS NULL OR m.provider_message_id IS NULL OR i.provider_message_id = m.provider_message_id
          OR starts_with(i.provider_message_id, m.provider_message_id || '.'))
     AND (i.recipient IS NULL
          OR EXISTS (SELECT FROM herald.channels c
                     WHERE c.name = m.channel
                       AND (herald._suppression_key(kind => c.kind, recipient => i.recipient)
                            = herald._suppression_key(kind => c.kind, recipient => m.recipient)
                            OR (c.kind = 'email'
                                AND herald._suppression_key(kind => 'email', recipient => i.recipient)
                                    IN (SELECT herald._suppression_key(kind => 'email', recipient => c.address)
                                        FROM herald._copies(payload => m.payload) AS c)))))
    -- processed says no more than that the provider took the message: kept when it
    -- settles a send (the message is being sent, or waits for a retry) or is unmatched
    WHERE i.event <> 'processed' OR m.id IS NULL OR m.status = 'processing' OR (m.status = 'queued' AND m.attempts > 0)
    ON CONFLICT ON CONSTRAINT delivery_events_once DO NOTHING
    RETURNING d.id, d.event_id, d.message_id, d.recipient, d.event, d.type, d.code, d.at
  ), matched AS ( -- copy: the event is about a cc or bcc address, not the message's recipient
    SELECT s.id, s.event_id, s.message_id, s.event, s.type, s.code, s.at, m.channel, m.recipient, m.ordering_key, c.kind,
           m.status, m.attempts,
           herald._suppression_key(kind => c.kind, recipient => coalesce(s.recipient, m.recipient)) AS suppression_key,
           s.recipient IS NOT NULL AND herald._suppression_key(kind => c.kind, recipient => s.recipient)
                                       <> herald._suppression_key(kind => c.kind, recipient => m.recipient) AS copy
    FROM stored s
    JOIN herald.messages m ON m.id = s.message_id
    JOIN herald.channels c ON c.name = m.channel
  ), best AS ( -- the message's outcome: the gravest new event of its own, unless a graver one is there
    SELECT DISTINCT ON (s.message_id) s.message_id, s.event, s.type, s.code, s.at,
           herald._outcome_rank(outcome => s.event, outcome_type => s.type) AS rank
    FROM matched s
    WHERE NOT s.copy AND s.event <> 'processed'
    ORDER BY s.message_id, 6 DESC, s.at DESC
  ), outcome AS (
    UPDATE herald.messages m
    SET outcome = b.event, outcome_type = b.type, outcome_code = b.code, outcome_at = b.at
    FROM best b
    WHERE m.id = b.message_id
      AND (m.outcome IS NULL
           OR b.rank > herald._outcome_rank(outcome => m.outcome, outcome_type => m.outcome_type)
           OR (b.rank = herald._outcome_rank(outcome => m.outcome, outcome_type => m.outcome_type) AND b.at >= m.outcome_at))
  ), appended AS ( -- receipts in the ordered log, one row per event name, in message id order
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes, details)
    SELECT s.event, record_delivery_events.now, array_agg(s.message_id ORDER BY s.message_id, s.id),
           array_agg(s.channel ORDER BY s.message_id, s.id),
           array_agg(herald._key_hash(s.ordering_key, s.recipient) ORDER BY s.message_id, s.id),
           array_agg(jsonb_strip_nulls(jsonb_build_object('type', s.type, 'code', s.code, 'at', s.at, 'source', source))
                     ORDER BY s.message_id, s.id)
    FROM matched s
    WHERE NOT s.copy AND s.event <> 'processed'
    GROUP BY s.event
    RETURNING 1
  ), suppressed AS ( -- outcomes that rule the address out (the recipient's or a copy's) stop future sends
    INSERT INTO herald.suppressions AS x (kind, recipient, reason, source, created_at)
    SELECT DISTINCT ON (s.kind, s.suppression_key) s.kind, s.suppression_key, r.reason, source, record_delivery_events.now
    FROM matched s
    CROSS JOIN LATERAL (SELECT herald._suppression_reason(kind => s.kind, event => s.event, type => s.type,
                                                          code => s.code) AS reason) AS r
    WHERE r.reason IS NOT NULL
    ORDER BY s.kind, s.suppression_key, s.id
    ON CONFLICT ON CONSTRAINT suppressions_pkey DO NOTHING
  ), taken AS ( -- the provider has a message herald has not marked sent: it went through
    SELECT DISTINCT ON (s.message_id) s.message_id, s.status,
           (SELECT i.provider_message_id FROM input i WHERE i.event_id = s.event_id LIMIT 1) AS provider_message_id
    FROM matched s
    WHERE NOT s.copy AND (s.status = 'processing' OR (s.status = 'queued' AND s.attempts > 0))
    ORDER BY s.message_id, 3 NULLS LAST, s.id
  )
  SELECT count(*)::integer, count(*) FILTER (WHERE s.message_id IS NULL)::integer,
         EXISTS (SELECT FROM appended),
         (SELECT array_agg(t.message_id) FROM taken t WHERE t.status = 'queued'),
         (SELECT array_agg(t.provider_message_id) FROM taken t WHERE t.status = 'queued'),
         (SELECT array_agg(t.message_id) FROM taken t WHERE t.provider_message_id IS NOT NULL),
         (SELECT array_agg(t.provider_message_id) FROM taken t WHERE t.provider_message_id IS NOT NULL)
  INTO recorded, unknown, v_logged, v_waiting, v_waiting_pids, v_noted, v_noted_pids
  FROM stored s;
  IF v_waiting IS NOT NULL THEN -- an attempt in doubt (or cut short) went through: no retry
    PERFORM herald._mark_sent(ids => v_waiting, lease_tokens => NULL, provider_message_ids => v_waiting_pids,
                              now => record_delivery_events.now);
  END IF;
  IF v_noted IS NOT NULL THEN -- being sent (a claim took it first, if it waited): fail and reap_stale read the id as sent
    UPDATE herald.messages m
    SET provider_message_id = u.provider_message_id
    FROM unnest(v_noted, v_noted_pids) AS u(id, provider_message_id)
    WHERE m.id = u.id AND m.status = 'processing' AND m.provider_message_id IS NULL;
  END IF;
  duplicates := n - recorded;
  recorded := recorded - unknown;
  IF v_logged THEN
    PERFORM herald._notify(ARRAY['herald_log']);
  END IF;
  RETURN NEXT;
END
$$;

REVOKE ALL ON FUNCTION herald.record_delivery_events(text, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.record_delivery_events(text, jsonb, timestamptz) TO herald_events, herald_admin;
COMMENT ON FUNCTION herald.record_delivery_events(text, jsonb, timestamptz) IS
  'Record providers'' delivery events once each: outcomes, log receipts, suppressions, and sends in doubt the provider took marked sent.';
