-- 014_listen_clocks_dropped.sql — one notify clock per channel carries both signals.
--
-- Release 5 kept two clocks per channel: a listen clock (migration 004), set to the
-- time by herald._listening when claim_batch or log_read was called, and the notify
-- clock of migration 002, set to the time of each notification; a producer notified
-- when the listen clock was not older than the notify clock. From release 6
-- (013_code.sql) herald._listening sets the notify clock itself to 0 instead, which
-- reads as "notify at the next message" (herald._notify_clock_due), and the next
-- notification sets it to its time again: the same decision from one sequence read
-- per channel instead of two, in the NOTIFY trigger of every producer's statement.
-- The listen clocks are unused since 013_code.sql and go here, after it, so that no
-- installed function refers to them at any point of an upgrade.
DROP SEQUENCE IF EXISTS herald.listen_clock_queue;
DROP SEQUENCE IF EXISTS herald.listen_clock_log;
