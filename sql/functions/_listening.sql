-- herald._listening(channel) — record that a listener of `channel` (herald_queue or
-- herald_log) may be about to wait for a NOTIFY: sets its listen clock (migration
-- 004) to now, in microseconds since the epoch. Called at the start of herald.claim_batch and
-- herald.log_read, before they read, so that a message committed after their read
-- always finds the clock newer than the last notification and notifies (see
-- herald._notify). Locks: none (setval is not transactional).
CREATE OR REPLACE FUNCTION herald._listening(channel text)
RETURNS void
LANGUAGE sql
VOLATILE
AS $$
  SELECT setval(CASE channel WHEN 'herald_queue' THEN 'herald.listen_clock_queue'::regclass
                             ELSE 'herald.listen_clock_log'::regclass END,
                (date_part('epoch', clock_timestamp()) * 1000000)::bigint)
$$;

REVOKE ALL ON FUNCTION herald._listening(text) FROM PUBLIC;
