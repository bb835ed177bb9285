-- herald._notify(channels) — NOTIFY each of `channels` (herald_queue, herald_log)
-- with an empty payload, each at most about once per herald.notify_interval_ms
-- (default 1 ms) across all sessions. Both clocks are read in one statement.
--
-- Why throttle: a transaction that issues NOTIFY takes a database-wide lock while it
-- commits, so a NOTIFY in every enqueue serialises all producers' commits (measured:
-- it halves single-row enqueue throughput with 8 connections). Under load, one
-- notification per interval wakes the listeners just as well.
-- How: the time of the last NOTIFY (ms since the epoch) is kept in a sequence
-- (herald.notify_clock_queue / herald.notify_clock_log): reading last_value and
-- setval take no row lock and survive rollback, so producers never wait for one
-- another here. Two sessions may both notify in the same interval; that is harmless.
-- A transaction older than the interval always notifies: it may commit long after the
-- listeners woke for the last notification.
-- The contract for listeners (see README): a notification is a hint and may cover
-- messages committed up to 2 intervals after it; after waking, claim again once that
-- much later, and poll as well. Setting herald.notify_interval_ms to 0 notifies in
-- every transaction (ALTER DATABASE … SET herald.notify_interval_ms = 0).
-- Locks: none (the NOTIFY itself takes the notify lock at commit).
CREATE OR REPLACE FUNCTION herald._notify(channels text[])
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
  interval_ms bigint := coalesce(nullif(current_setting('herald.notify_interval_ms', true), '')::bigint, 1);
  now_ms bigint;
  last_queue bigint;
  last_log bigint;
  ch text;
BEGIN
  IF interval_ms > 0 AND clock_timestamp() - now() < interval_ms * interval '1 millisecond' THEN
    now_ms := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    SELECT q.last_value, l.last_value INTO last_queue, last_log
    FROM herald.notify_clock_queue q, herald.notify_clock_log l;
    FOREACH ch IN ARRAY channels LOOP
      IF ch = 'herald_queue' THEN
        CONTINUE WHEN now_ms - last_queue < interval_ms; -- one went out less than an interval ago
        PERFORM setval('herald.notify_clock_queue', now_ms);
      ELSE
        CONTINUE WHEN now_ms - last_log < interval_ms;
        PERFORM setval('herald.notify_clock_log', now_ms);
      END IF;
      PERFORM pg_notify(ch, '');
    END LOOP;
    RETURN;
  END IF;
  FOREACH ch IN ARRAY channels LOOP
    PERFORM pg_notify(ch, '');
  END LOOP;
END
$$;

REVOKE ALL ON FUNCTION herald._notify(text[]) FROM PUBLIC;
