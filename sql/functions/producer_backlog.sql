-- herald.producer_backlog — view: per producer and channel, the unfinished messages
-- (queued, counting scheduled ones; held; processing) and the earliest run_at of the
-- queued, and the bound on its messages being sent there (its herald.producers
-- concurrency, else the channel's producer_concurrency; NULL: none; processing at it:
-- the producer waits for its own sends): who fills a channel, for an operator deciding
-- to demote a producer (herald.producers.min_priority), move its backlog or bound it
-- (docs/sql.md, "Producers' policy"). Reads every unfinished message: for a look now
-- and then, not a dashboard's every refresh. herald_admin only.
CREATE OR REPLACE VIEW herald.producer_backlog AS
SELECT b.producer, b.channel, b.queued, b.held, b.processing, b.earliest_run_at,
       herald._producer_bound(c.producer_concurrency, p.concurrency) AS concurrency
FROM (SELECT m.producer, m.channel,
             count(*) FILTER (WHERE m.status = 'queued') AS queued,
             count(*) FILTER (WHERE m.status = 'held') AS held,
             count(*) FILTER (WHERE m.status = 'processing') AS processing,
             min(m.run_at) FILTER (WHERE m.status = 'queued') AS earliest_run_at
      FROM herald.messages m
      WHERE m.status IN ('queued', 'held', 'processing')
      GROUP BY m.producer, m.channel) AS b
LEFT JOIN herald.channels c ON c.name = b.channel
LEFT JOIN herald.producers p ON p.producer = b.producer;

REVOKE ALL ON herald.producer_backlog FROM PUBLIC;
GRANT SELECT ON herald.producer_backlog TO herald_admin;
COMMENT ON VIEW herald.producer_backlog IS 'Unfinished messages per producer and channel, and the bound on its sends there: who fills the queue (admins; reads every unfinished message).';
