-- herald.queue_stats — view: per channel and status, how many messages, how many of
-- the queued ones are ready now (run_at <= now), and the age of the oldest (by
-- created_at; for queued rows, of the oldest ready one by run_at: how late the queue
-- is running), and whether the channel is paused (herald.channels says why).
-- Reads the whole messages table (a count per status has no cheaper source); keep the
-- table small with herald.purge. Readable by herald_worker (the runner samples it for
-- its queue-depth metric) and herald_admin.
CREATE OR REPLACE VIEW herald.queue_stats AS
SELECT m.channel,
       m.status,
       count(*) AS count,
       count(*) FILTER (WHERE m.status = 'queued' AND m.run_at <= now()) AS ready,
       CASE WHEN m.status = 'queued'
            THEN now() - min(m.run_at) FILTER (WHERE m.run_at <= now())
            ELSE now() - min(m.created_at)
       END AS oldest_age,
       (SELECT c.paused FROM herald.channels c WHERE c.name = m.channel) AS paused
FROM herald.messages m
GROUP BY m.channel, m.status;

COMMENT ON VIEW herald.queue_stats IS 'Messages per channel and status: count, ready now, age of the oldest, channel paused.';
REVOKE ALL ON herald.queue_stats FROM PUBLIC;
GRANT SELECT ON herald.queue_stats TO herald_worker, herald_admin;
