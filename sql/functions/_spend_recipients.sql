-- herald._spend_recipients(specs, barred, single, now) — count the messages just stored
-- against their recipients' budgets (herald.recipient_buckets) on channels with a
-- recipient_limit, and their ranges' (herald._range_key: an SMS number range, a webhook
-- URL's site) on channels with a range_limit: each moves the budget's clear_at on by
-- window / limit (herald._budget_after, at herald._budget_clock). A budget left over
-- its limit (herald._over_budget) refuses the call with 53400 'recipient' (or
-- 'messages[i].recipient', the first message to it); the caller's transaction then
-- undoes it all. NULL specs (repeats) and the positions in barred (suppressed) count
-- nothing. Called by herald._enqueue after it stored the messages. Rows are locked in
-- (channel, key) order, so concurrent enqueues do not deadlock on them. Index:
-- recipient_buckets' primary key. Locks: the budgets' rows until the transaction ends
-- (enqueues to one recipient or range take turns); a row another transaction holds is
-- waited for at most the channels' budget_wait, then 55P03 'recipient' (or 'messages').
CREATE OR REPLACE FUNCTION herald._spend_recipients(
  specs herald.message_spec[], barred bigint[], single boolean, now timestamptz
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
  v_clock timestamptz := herald._budget_clock(now => now);
  v_channels text[];
  v_recipients text[];
  v_over record;
  v_wait interval;
  v_lock_timeout text := current_setting('lock_timeout');
BEGIN
  SELECT max(c.budget_wait) INTO v_wait
  FROM herald.channels c
  WHERE c.name IN (SELECT s.channel FROM unnest(specs) AS s) AND (c.recipient_limit IS NOT NULL OR c.range_limit IS NOT NULL);
  BEGIN -- a caller's shorter lock_timeout stands; the block's end (or its abort) restores it
    IF v_wait IS NOT NULL AND (v_lock_timeout = '0' OR v_lock_timeout::interval > v_wait) THEN
      PERFORM set_config('lock_timeout', (extract(epoch FROM v_wait) * 1000)::bigint || 'ms', true);
    END IF;
    WITH asked AS MATERIALIZED ( -- each recipient's count, and each number range's (sms)
      SELECT c.name AS channel, herald._mailbox_key(kind => c.kind, recipient => s.recipient) AS recipient,
             count(*)::integer AS n, c.recipient_limit AS lim, c.recipient_window AS span
      FROM unnest(specs) WITH ORDINALITY AS s
      JOIN herald.channels c ON c.name = s.channel
      WHERE c.recipient_limit IS NOT NULL AND NOT s.ordinality = ANY (coalesce(barred, '{}'))
      GROUP BY 1, 2, 4, 5
      UNION ALL
      SELECT c.name, herald._range_key(channel => c, recipient => s.recipient),
             count(*)::integer, c.range_limit, c.range_window
      FROM unnest(specs) WITH ORDINALITY AS s
      JOIN herald.channels c ON c.name = s.channel
      WHERE c.range_limit IS NOT NULL AND NOT s.ordinality = ANY (coalesce(barred, '{}'))
      GROUP BY 1, 2, 4, 5
    ), spent AS (
      -- excluded.clear_at - v_clock is what these messages add: n steps of span / lim.
      INSERT INTO herald.recipient_buckets AS b (channel, recipient, clear_at)
      SELECT a.channel, a.recipient,
             herald._budget_after(clear_at => NULL, now => v_clock, spent => a.span / a.lim * a.n)
      FROM asked a
      ORDER BY a.channel, a.recipient
      ON CONFLICT (channel, recipient) DO UPDATE
      SET clear_at = herald._budget_after(clear_at => b.clear_at, now => herald._budget_clock(now => _spend_recipients.now),
                                          spent => excluded.clear_at - v_clock)
      RETURNING b.channel, b.recipient, b.clear_at
    )
    SELECT array_agg(k.channel), array_agg(k.recipient) INTO v_channels, v_recipients
    FROM spent k
    JOIN asked a ON a.channel = k.channel AND a.recipient = k.recipient
    WHERE herald._over_budget(clear_at => k.clear_at, now => herald._budget_clock(now => _spend_recipients.now),
                              budget_window => a.span, budget_limit => a.lim) > interval '0';
    PERFORM set_config('lock_timeout', v_lock_timeout, true);
  EXCEPTION WHEN lock_not_available THEN
    PERFORM herald._reject(code => '55P03', field => CASE WHEN single THEN 'recipient' ELSE 'messages' END,
      message => format('waited %s for the budget of a recipient or range (recipient_limit, range_limit), held by another '
                        || 'transaction that enqueued to it and has not committed', v_wait),
      hint => 'retry; producers enqueue last in their transactions, and an admin raises herald.channels.budget_wait');
  END;
  IF v_channels IS NOT NULL THEN -- the first message to one of them
    SELECT s.ordinality AS first, s.recipient, c.name AS channel, c.kind, o.recipient <> m.key AS ranged,
           CASE WHEN o.recipient <> m.key THEN c.range_limit ELSE c.recipient_limit END AS lim,
           CASE WHEN o.recipient <> m.key THEN c.range_window ELSE c.recipient_window END AS span
    INTO v_over
    FROM unnest(specs) WITH ORDINALITY AS s
    JOIN herald.channels c ON c.name = s.channel
    CROSS JOIN LATERAL (SELECT herald._mailbox_key(kind => c.kind, recipient => s.recipient) AS key) AS m
    JOIN unnest(v_channels, v_recipients) AS o (channel, recipient)
      ON o.channel = c.name
     AND o.recipient IN (m.key, herald._range_key(channel => c, recipient => s.recipient))
    ORDER BY s.ordinality
    LIMIT 1;
    PERFORM herald._reject(code => '53400',
      field => CASE WHEN single THEN 'recipient' ELSE format('messages[%s].recipient', v_over.first - 1) END,
      message => CASE WHEN v_over.ranged
        THEN format('%s of %s may be sent at most %s messages per %s on channel %L (its range_limit)',
                    CASE v_over.kind WHEN 'webhook' THEN 'the URLs of the site' ELSE 'the numbers of the range' END,
                    v_over.recipient, v_over.lim, v_over.span, v_over.channel)
        ELSE format('%s may be sent at most %s messages per %s on channel %L (its recipient_limit)',
                    v_over.recipient, v_over.lim, v_over.span, v_over.channel) END,
      hint => 'retry after herald.recipient_wait(channel, recipient) seconds; an admin raises herald.channels.recipient_limit or range_limit');
  END IF;
END
$$;

REVOKE ALL ON FUNCTION herald._spend_recipients(herald.message_spec[], bigint[], boolean, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._spend_recipients(herald.message_spec[], bigint[], boolean, timestamptz) IS
  'Private: count stored messages against their recipients'' budgets (channels.recipient_limit); 53400 recipient past it.';
