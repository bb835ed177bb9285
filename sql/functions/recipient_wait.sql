-- herald.recipient_wait(channel, recipient, now) — how many seconds until `recipient`
-- may be sent one more message on `channel`, whose recipient_limit it, or whose
-- range_limit its range (an SMS number range, a webhook URL's site), has reached (herald.recipient_buckets); NULL when a
-- message would be taken now, or the channel has no limit. What an enqueue refused
-- with 53400 'recipient' waits for; the HTTP intake answers it as Retry-After. It tells
-- any producer whether the recipient is at its limit, as an enqueue to it would. Errors: 22V01 channel (unknown); 22V12 NULL.
-- Index: channels' and recipient_buckets' primary keys. Locks: none. SECURITY
-- DEFINER for herald_producer.
CREATE OR REPLACE FUNCTION herald.recipient_wait(channel text, recipient text, now timestamptz DEFAULT now())
RETURNS integer
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  clock_ok boolean := herald._check_clock(now => recipient_wait.now); -- first: a forged clock changes nothing
  v_channel herald.channels;
  v_seconds numeric;
BEGIN
  PERFORM herald._check_not_null(fields => ARRAY['channel', 'recipient'],
                                 present => ARRAY[channel IS NOT NULL, recipient IS NOT NULL]);
  SELECT * INTO v_channel FROM herald.channels c WHERE c.name = recipient_wait.channel;
  IF NOT FOUND THEN
    PERFORM herald._reject(code => '22V01', field => 'channel', message => format('unknown channel %L', channel));
  END IF;
  -- One more message moves each budget's clear_at on by a step; the wait is how far the
  -- furthest runs over: the recipient's (recipient_limit), its range's (range_limit).
  SELECT max(extract(epoch FROM herald._over_budget(
           clear_at => herald._budget_after(clear_at => b.clear_at, now => recipient_wait.now, spent => w.span / w.lim),
           now => recipient_wait.now, budget_window => w.span, budget_limit => w.lim)))
  INTO v_seconds
  FROM (VALUES (herald._mailbox_key(kind => v_channel.kind, recipient => recipient_wait.recipient),
                v_channel.recipient_limit, v_channel.recipient_window),
               (herald._range_key(channel => v_channel, recipient => recipient_wait.recipient),
                v_channel.range_limit, v_channel.range_window)) AS w (key, lim, span)
  JOIN herald.recipient_buckets b ON b.channel = v_channel.name AND b.recipient = w.key
  WHERE w.lim IS NOT NULL;
  IF v_seconds IS NULL OR v_seconds <= 0 THEN
    RETURN NULL;
  END IF;
  RETURN ceil(v_seconds)::integer;
END
$$;

REVOKE ALL ON FUNCTION herald.recipient_wait(text, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.recipient_wait(text, text, timestamptz) TO herald_producer, herald_admin;
COMMENT ON FUNCTION herald.recipient_wait(text, text, timestamptz) IS
  'Seconds until a recipient at its channel''s recipient_limit may be sent one more message; NULL: now.';
