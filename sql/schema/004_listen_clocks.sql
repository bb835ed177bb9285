-- 004_listen_clocks.sql — when a listener last said it was about to wait.
--
-- herald.claim_batch sets herald.listen_clock_queue and herald.log_read sets
-- herald.listen_clock_log (microseconds since the epoch) each time they are called:
-- a caller that gets less than it asked for is about to wait for a NOTIFY.
-- herald._notify compares them with the notify clocks of 002_log.sql: a producer
-- notifies when a listener has started waiting since the last notification on that
-- channel (or when none went out for herald.notify_interval_ms), and otherwise not,
-- because every listener is awake and will claim or read again anyway. So a busy
-- queue pays no NOTIFY (whose commit takes a database-wide lock), and an idle one
-- wakes its listeners at the first message.
-- From this release on, the notify clocks of 002_log.sql hold microseconds too (its
-- comment says milliseconds; a millisecond value left from release 1 reads as long
-- ago and is replaced at the first notification).
-- Sequences for the reason given in 002_log.sql: setval and last_value take no row
-- lock and are not rolled back.
CREATE SEQUENCE herald.listen_clock_queue AS bigint MINVALUE 0 START 0;
CREATE SEQUENCE herald.listen_clock_log AS bigint MINVALUE 0 START 0;

GRANT ALL ON SEQUENCE herald.listen_clock_queue, herald.listen_clock_log TO herald_admin;
