-- herald._listening(channel) — record that a listener of `channel` (herald_queue or
-- herald_log) may be about to wait for a NOTIFY: sets the channel's notify clock
-- (migration 002) to 0, which herald._notify_due reads as "notify at the next
-- message". Called at the start of herald.claim_batch and herald.log_read, before
-- they read, so that a message committed after their read always finds the clock at
-- 0 (or at a notification sent after it, which woke this listener too) and
-- notifies; the next notification sets the clock to its time again (herald._notify).
-- Returns 0 (setval's result) rather than void: a one-expression SQL function that
-- returns its expression's type is inlined into the caller's statement, while a
-- void one is run as a statement of its own, which cost a tenth of a claim_batch
-- call that found three messages (about 100,000 instructions of 1,035,000). Release
-- 12 made it bigint; callers PERFORM it.
-- Locks: none (setval is not transactional).
CREATE OR REPLACE FUNCTION herald._listening(channel text)
RETURNS bigint
LANGUAGE sql
VOLATILE
AS $$
  SELECT setval(CASE channel WHEN 'herald_queue' THEN 'herald.notify_clock_queue'::regclass
                             ELSE 'herald.notify_clock_log'::regclass END, 0)
$$;

REVOKE ALL ON FUNCTION herald._listening(text) FROM PUBLIC;
