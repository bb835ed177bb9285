-- herald.throughput — view: messages finished per channel and minute over the last
-- hour: sent, dead, cancelled, expired. For humans and dashboards.
-- Index: none by default: a scan of herald.messages; with messages_finished_idx
-- created as docs/tuning.md says, a range scan from an hour ago.
-- Readable by herald_worker and herald_admin.
CREATE OR REPLACE VIEW herald.throughput AS
SELECT m.channel,
       date_trunc('minute', m.finished_at) AS minute,
       count(*) FILTER (WHERE m.status = 'sent') AS sent,
       count(*) FILTER (WHERE m.status = 'dead') AS dead,
       count(*) FILTER (WHERE m.status = 'cancelled') AS cancelled,
       count(*) FILTER (WHERE m.status = 'expired') AS expired
FROM herald.messages m
WHERE m.finished_at >= now() - interval '1 hour'
GROUP BY m.channel, date_trunc('minute', m.finished_at);

COMMENT ON VIEW herald.throughput IS 'Messages finished per channel and minute over the last hour.';
REVOKE ALL ON herald.throughput FROM PUBLIC;
GRANT SELECT ON herald.throughput TO herald_worker, herald_admin;
