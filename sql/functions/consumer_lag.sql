-- herald.consumer_lag — view: per consumer group and partition, the committed offset,
-- the last sequenced offset of the log, how many offsets lie between (an upper bound
-- of the partition's unread events when the group has several partitions), the
-- events still waiting for an offset, and when the group last acknowledged.
-- Readable by herald_consumer, herald_admin, and herald_worker (the runner's gauge
-- herald_log_consumer_lag_offsets).
CREATE OR REPLACE VIEW herald.consumer_lag AS
SELECT o.group_name,
       o.partition,
       o.committed_offset,
       c.next_offset - 1 AS log_end,
       c.next_offset - 1 - o.committed_offset AS lag,
       (SELECT coalesce(sum(cardinality(p.message_ids)), 0) FROM herald.log_statements p
        WHERE p.first_offset IS NULL) AS pending,
       o.updated_at
FROM herald.consumer_offsets o
CROSS JOIN herald.log_counter c;

COMMENT ON VIEW herald.consumer_lag IS 'Consumer group progress against the end of herald.log.';
REVOKE ALL ON herald.consumer_lag FROM PUBLIC;
GRANT SELECT ON herald.consumer_lag TO herald_consumer, herald_worker, herald_admin;
