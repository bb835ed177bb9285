-- herald._notify_due(channel) — true when a producer should NOTIFY `channel`
-- (herald_queue or herald_log): a listener said it may be waiting since the last
-- notification (the channel's notify clock is 0), or none went out for
-- herald.notify_interval_ms. The rule of herald._notify: herald._notify_clock_due of
-- the channel's notify clock, read with pg_sequence_last_value (NULL until first set;
-- much cheaper than SELECT … FROM the sequence, and each read takes the sequence
-- page's buffer lock, so one clock per channel keeps producers off shared pages).
-- One SQL expression, so the planner inlines it. Locks: none.
CREATE OR REPLACE FUNCTION herald._notify_due(channel text)
RETURNS boolean
LANGUAGE sql
VOLATILE
AS $$
  SELECT herald._notify_clock_due(pg_sequence_last_value(CASE channel WHEN 'herald_queue' THEN 'herald.notify_clock_queue'::regclass
                                                                      ELSE 'herald.notify_clock_log'::regclass END))
$$;

REVOKE ALL ON FUNCTION herald._notify_due(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._notify_due(text) IS
  'Private: true when a notification channel is due a NOTIFY (inlined).';
