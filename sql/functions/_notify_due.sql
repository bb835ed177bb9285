-- herald._notify_due(channel) — true when a producer should NOTIFY `channel`
-- (herald_queue or herald_log): a listener may be waiting, or none was told for a
-- while. The rule of herald._notify, as one expression:
--   the channel's listen clock (set by herald._listening when claim_batch or
--   log_read is called: its caller may be about to wait) is not older than its
--   notify clock (the last notification): some listener started waiting after the
--   last notification went out; or
--   no notification went out for herald.notify_interval_ms (default 50; 0 = always):
--   the fallback for listeners that never call those functions, and for a
--   notification lost to a rollback.
-- Clocks are microseconds since the epoch in sequences (migrations 002 and 004), read
-- with pg_sequence_last_value (ten times cheaper than SELECT … FROM the sequence; NULL
-- until first set). The two conditions are one comparison, notify clock <=
-- greatest(listen clock, now - interval), so each clock is read once: two sequence
-- reads per channel where the two-branch form read the notify clock twice.
-- One SQL expression, so the planner inlines it: the NOTIFY trigger evaluates it in
-- every producer's statement and calls herald._notify only when it is true (a
-- plain PL/pgSQL call there cost about a tenth of single-row enqueue throughput).
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._notify_due(channel text)
RETURNS boolean
LANGUAGE sql
VOLATILE
AS $$
  SELECT coalesce(pg_sequence_last_value(CASE channel WHEN 'herald_queue' THEN 'herald.notify_clock_queue'::regclass
                                                      ELSE 'herald.notify_clock_log'::regclass END), 0)
           <= greatest(coalesce(pg_sequence_last_value(CASE channel WHEN 'herald_queue' THEN 'herald.listen_clock_queue'::regclass
                                                                    ELSE 'herald.listen_clock_log'::regclass END), 0),
                       (date_part('epoch', clock_timestamp()) * 1000000)::bigint
                         - coalesce(nullif(current_setting('herald.notify_interval_ms', true), '')::bigint, 50) * 1000)
$$;

REVOKE ALL ON FUNCTION herald._notify_due(text) FROM PUBLIC;
