-- herald.forget(kind, recipient, now) — erase what herald holds about one recipient (a
-- person's right to erasure), counted by mailbox on channels of `kind` (e-mail: any
-- letter case, any +tag; herald._mailbox_key). Its messages not yet sent are cancelled
-- (a 'cancelled' event; the next message of an ordering key goes on), then deleted
-- with their delivery events, events naming it as a copy, set-aside copies and its
-- budget; it is taken out of other e-mails' cc and bcc; its log events keep their
-- offsets but lose detail and receipt; where other messages' failures, log details,
-- set-aside events or receipts name it (a copy's refusal), the address becomes
-- [forgotten] (texts). A message being sent stays (in_flight: call again once it
-- finished); so does the suppression entry. Returns the counts. Errors: 22V12 kind,
-- recipient. Index: none: scans of herald.messages (herald._person_messages, then the
-- texts), herald.log_statements and herald.delivery_events (a rare admin act), then
-- primary keys. Locks: the rows it
-- changes. Admin only.
CREATE OR REPLACE FUNCTION herald.forget(kind text, recipient text, now timestamptz DEFAULT now())
RETURNS TABLE (messages integer, copies integer, delivery_events integer, log_events integer, in_flight integer,
               texts integer)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off -- its scans' filters are cheap: compiling them cost more than it saved (docs/performance.md)
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => forget.now); -- first: a forged clock changes nothing
  v_key text;
  v_said text; -- the address as free text says it: the regular expression of its forms
  v_n integer;
  v_all bigint[];
  v_copies bigint[];
  v_ids bigint[];
  v_ordered bigint[];
  v_cancelled integer;
BEGIN
  v_key := herald._person_key(kind => forget.kind, recipient => forget.recipient);
  -- Found once; the rest goes by primary key.
  SELECT array_agg(p.id) FILTER (WHERE p.role = 'to'), array_agg(p.id) FILTER (WHERE p.role = 'copy')
  INTO v_all, v_copies
  FROM herald._person_messages(kind => forget.kind, mailbox => v_key) p;

  WITH cancelled AS (
    UPDATE herald.messages m
    SET status = 'cancelled', finished_at = forget.now
    WHERE m.id = ANY (v_all) AND m.status IN ('queued', 'held')
    RETURNING m.id, m.channel, m.recipient, m.ordering_key
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
    SELECT 'cancelled', forget.now, array_agg(x.id ORDER BY x.id), array_agg(x.channel ORDER BY x.id),
           array_agg(herald._key_hash(x.ordering_key, x.recipient) ORDER BY x.id)
    FROM cancelled x HAVING count(*) > 0
  )
  SELECT count(*), array_agg(x.id) FILTER (WHERE x.ordering_key IS NOT NULL) INTO v_cancelled, v_ordered FROM cancelled x;
  IF v_ordered IS NOT NULL THEN
    PERFORM herald._release_after(ids => v_ordered);
  END IF;

  WITH gone AS (
    DELETE FROM herald.messages m
    WHERE m.id = ANY (v_all) AND m.finished_at IS NOT NULL
    RETURNING m.id
  )
  SELECT array_agg(g.id) INTO v_ids FROM gone g;
  messages := coalesce(cardinality(v_ids), 0);
  in_flight := coalesce(cardinality(v_all), 0) - messages; -- being sent: not finished, not cancellable

  copies := 0;
  IF forget.kind = 'email' THEN
    UPDATE herald.messages m
    SET payload = m.payload - 'cc' - 'bcc' || jsonb_strip_nulls(jsonb_build_object(
          'cc', (SELECT jsonb_agg(a) FROM jsonb_array_elements(m.payload -> 'cc') a
                 WHERE herald._mailbox_key(kind => 'email', recipient => a #>> '{}') <> v_key),
          'bcc', (SELECT jsonb_agg(a) FROM jsonb_array_elements(m.payload -> 'bcc') a
                  WHERE herald._mailbox_key(kind => 'email', recipient => a #>> '{}') <> v_key)))
    WHERE m.id = ANY (v_copies);
    GET DIAGNOSTICS copies = ROW_COUNT;
  END IF;

  DELETE FROM herald.delivery_events d
  WHERE d.message_id = ANY (v_ids)
     OR herald._mailbox_key(kind => forget.kind, recipient => d.recipient) = v_key;
  GET DIAGNOSTICS delivery_events = ROW_COUNT;
  DELETE FROM herald.consumer_dead_letters d WHERE d.message_id = ANY (v_ids);
  DELETE FROM herald.recipient_buckets b USING herald.channels c
  WHERE c.name = b.channel AND c.kind = forget.kind AND b.recipient = v_key;

  log_events := 0;
  IF v_ids IS NOT NULL THEN
    WITH redacted AS (
      UPDATE herald.log_statements s
      SET details = CASE WHEN s.details IS NOT NULL THEN
                      ARRAY(SELECT CASE WHEN e.id = ANY (v_ids) THEN '{}'::jsonb ELSE e.detail END
                            FROM unnest(s.message_ids, s.details) WITH ORDINALITY AS e (id, detail, i) ORDER BY e.i) END,
          provider_message_ids = CASE WHEN s.provider_message_ids IS NOT NULL THEN
                      ARRAY(SELECT CASE WHEN e.id = ANY (v_ids) THEN NULL ELSE e.pid END
                            FROM unnest(s.message_ids, s.provider_message_ids) WITH ORDINALITY AS e (id, pid, i) ORDER BY e.i) END
      WHERE s.message_ids && v_ids
      RETURNING (SELECT count(*) FROM unnest(s.message_ids) AS e (id) WHERE e.id = ANY (v_ids)) AS n
    )
    SELECT coalesce(sum(r.n), 0) INTO log_events FROM redacted r;
  END IF;
  -- An e-mail address in any letter case and with any +tag (the mailbox), else the
  -- recipient as given; not inside a longer address or number.
  v_said := CASE WHEN forget.kind = 'email'
    THEN '(?<![A-Za-z0-9._%+-])' || regexp_replace(split_part(v_key, '@', 1), '([^A-Za-z0-9])', '\\\1', 'g')
         || '(\+[^@[:space:]<>"]*)?@' || regexp_replace(split_part(v_key, '@', 2), '([^A-Za-z0-9])', '\\\1', 'g')
         || '(?![A-Za-z0-9-]|\.[A-Za-z0-9])'
    ELSE '(?<![A-Za-z0-9])' || regexp_replace(forget.recipient, '([^A-Za-z0-9])', '\\\1', 'g') || '(?![A-Za-z0-9])' END;
  texts := 0;
  UPDATE herald.messages m
  SET last_error = regexp_replace(m.last_error, v_said, '[forgotten]', 'gi'),
      errors = regexp_replace(m.errors::text, v_said, '[forgotten]', 'gi')::jsonb
  WHERE m.errors <> '[]' AND (m.last_error ~* v_said OR m.errors::text ~* v_said);
  GET DIAGNOSTICS v_n = ROW_COUNT;
  texts := texts + v_n;
  UPDATE herald.log_statements s
  SET details = regexp_replace(s.details::text, v_said, '[forgotten]', 'gi')::jsonb[]
  WHERE s.details IS NOT NULL AND s.details::text ~* v_said;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  texts := texts + v_n;
  UPDATE herald.consumer_dead_letters d
  SET detail = regexp_replace(d.detail::text, v_said, '[forgotten]', 'gi')::jsonb,
      error = regexp_replace(d.error, v_said, '[forgotten]', 'gi')
  WHERE d.detail::text ~* v_said OR d.error ~* v_said;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  texts := texts + v_n;
  UPDATE herald.delivery_events d
  SET reason = regexp_replace(d.reason, v_said, '[forgotten]', 'gi')
  WHERE d.reason ~* v_said;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  texts := texts + v_n;

  IF v_cancelled > 0 THEN
    PERFORM herald._notify(ARRAY['herald_log']);
  END IF;
  RETURN NEXT;
END
$$;

REVOKE ALL ON FUNCTION herald.forget(text, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.forget(text, text, timestamptz) TO herald_admin;
COMMENT ON FUNCTION herald.forget(text, text, timestamptz) IS
  'Erase a recipient: cancel and delete its messages, their delivery events and log details, its copies in others'' cc and bcc, its budget, its address in others'' texts; the suppression entry stays.';
