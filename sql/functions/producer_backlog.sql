-- herald.producer_backlog — view: per producer and channel, the unfinished messages
-- (queued, counting scheduled ones; held; processing) and the earliest run_at of the
-- queued: who fills a channel, for an operator deciding to demote a producer
-- (herald.producers.min_priority) or to move its backlog (docs/sql.md, "Producers'
-- policy"). Reads every unfinished message: for a look now and then, not a
-- dashboard's every refresh. herald_admin only.
CREATE OR REPLACE VIEW herald.producer_backlog AS
SELECT m.producer, m.channel,
       count(*) FILTER (WHERE m.status = 'queued') AS queued,
       count(*) FILTER (WHERE m.status = 'held') AS held,
       count(*) FILTER (WHERE m.status = 'processing') AS processing,
       min(m.run_at) FILTER (WHERE m.status = 'queued') AS earliest_run_at
FROM herald.messages m
WHERE m.status IN ('queued', 'held', 'processing')
GROUP BY m.producer, m.channel;

REVOKE ALL ON herald.producer_backlog FROM PUBLIC;
GRANT SELECT ON herald.producer_backlog TO herald_admin;
COMMENT ON VIEW herald.producer_backlog IS 'Unfinished messages per producer and channel: who fills the queue (admins; reads every unfinished message).';
