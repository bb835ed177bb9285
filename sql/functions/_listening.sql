-- herald._listening(channel) — record that a listener of `channel` (herald_queue or
-- herald_log) may be about to wait: set the channel's notify clock to 0, which
-- herald._notify_due reads as "notify at the next message". Called by claim_batch and
-- log_read before they read, so a message committed after their read finds the clock
-- at 0 (or at a later notification, which woke this listener too).
-- Returns 0 (setval's result), not void: a one-expression SQL function returning its
-- expression's type is inlined into the caller's statement. Callers PERFORM it.
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
COMMENT ON FUNCTION herald._listening(text) IS
  'Private: mark that a listener of a notification channel may be about to wait.';
