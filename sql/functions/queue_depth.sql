-- herald.queue_depth — view: per channel of herald.channels, how many messages wait
-- ('queued', scheduled ones included) and how many are out for sending
-- ('processing'); one row per channel and status, 0 when there are none (a gauge
-- that reads 0 rather than one that vanishes). The runner samples it every
-- HERALD_STATS_INTERVAL for its herald_queue_depth gauge.
-- Reads only the rows of the two partial indexes messages_claim_idx (status =
-- 'queued') and messages_lease_expiry_idx (status = 'processing'), so its cost follows
-- the backlog, not the table: sent, dead and cancelled rows kept for history are not
-- visited (herald.queue_stats, which counts every status, scans the whole table).
-- Readable by herald_worker and herald_admin (release 13).
CREATE OR REPLACE VIEW herald.queue_depth AS
WITH counted AS (
  SELECT m.channel, 'queued'::text AS status, count(*) AS count
  FROM herald.messages m
  WHERE m.status = 'queued'
  GROUP BY m.channel
  UNION ALL
  SELECT m.channel, 'processing'::text, count(*)
  FROM herald.messages m
  WHERE m.status = 'processing'
  GROUP BY m.channel
)
SELECT c.name AS channel, s.status, coalesce(k.count, 0) AS count
FROM herald.channels c
CROSS JOIN (VALUES ('queued'::text), ('processing'::text)) AS s(status)
LEFT JOIN counted k ON k.channel = c.name AND k.status = s.status;

COMMENT ON VIEW herald.queue_depth IS 'Messages queued and processing per channel, read through the partial indexes.';
REVOKE ALL ON herald.queue_depth FROM PUBLIC;
GRANT SELECT ON herald.queue_depth TO herald_worker, herald_admin;
