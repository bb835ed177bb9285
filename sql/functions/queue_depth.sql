-- herald.queue_depth — view: per channel of herald.channels, how many messages are
-- queued and due (run_at reached), scheduled (queued, run_at later: a future send, a
-- retry's wait, the end of quiet hours), held and processing; one row per channel and
-- status, 0 when there are none (a gauge that reads 0 rather than vanishes). The runner
-- samples it every HERALD_STATS_INTERVAL for herald_queue_depth_messages.
-- Reads only the rows of the partial indexes messages_claim_idx, messages_expiry_idx
-- and messages_in_flight_idx: its cost follows the backlog, not the table (unlike
-- herald.queue_stats). Readable by herald_worker and herald_admin.
CREATE OR REPLACE VIEW herald.queue_depth AS
WITH counted AS (
  SELECT m.channel, CASE WHEN m.run_at > now() THEN 'scheduled' ELSE 'queued' END AS status, count(*) AS count
  FROM herald.messages m
  WHERE m.status = 'queued'
  GROUP BY 1, 2
  UNION ALL
  SELECT m.channel, 'held'::text, count(*)
  FROM herald.messages m
  WHERE m.status = 'held'
  GROUP BY m.channel
  UNION ALL
  SELECT m.channel, 'processing'::text, count(*)
  FROM herald.messages m
  WHERE m.status = 'processing'
  GROUP BY m.channel
)
SELECT c.name AS channel, s.status, coalesce(k.count, 0) AS count
FROM herald.channels c
CROSS JOIN (VALUES ('queued'::text), ('scheduled'::text), ('held'::text), ('processing'::text)) AS s(status)
LEFT JOIN counted k ON k.channel = c.name AND k.status = s.status;

COMMENT ON VIEW herald.queue_depth IS 'Messages queued and due, scheduled, held and processing per channel, read through the partial indexes.';
REVOKE ALL ON herald.queue_depth FROM PUBLIC;
GRANT SELECT ON herald.queue_depth TO herald_worker, herald_admin;
