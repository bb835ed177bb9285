-- herald._log_after(after, partitions, partition, max) — the first `max` events with
-- an offset above `after` whose key falls in `partition` of `partitions`
-- ((key_hash & 2147483647) % partitions), in offset order. Used by log_read and
-- log_dead_letter. Each event's detail is built as the view herald.log builds it
-- (herald._log_detail: stored JSON, or a 'sent' event's typed receipt and
-- attempts), and only for the
-- events returned: above the LIMIT, not for every event of the statements the scan
-- expands (a statement holds up to 10,000).
-- Index: log_statements_offset_idx, twice: a backward probe for the statement that
-- holds offset after + 1, then a forward scan from it. The scan yields statements
-- in offset order and an incremental sort orders each one's events, so the LIMIT
-- stops the scan as soon as `max` events are found.
CREATE OR REPLACE FUNCTION herald._log_after(after bigint, partitions integer, partition integer, max integer)
RETURNS TABLE ("offset" bigint, message_id bigint, kind text, channel text, key_hash integer, at timestamptz, detail jsonb)
LANGUAGE sql
STABLE
AS $$
  SELECT o.first_offset + o.pos - 1, o.message_id, o.kind, o.channel, o.key_hash, o.at,
         herald._log_detail(o.kind, o.detail, o.provider_message_id, o.attempts)
  FROM (
    SELECT s.first_offset, e.pos, e.message_id, s.kind, e.channel, e.key_hash, s.at,
           e.detail, e.provider_message_id, e.attempts
    FROM herald.log_statements s
    CROSS JOIN LATERAL unnest(s.message_ids, s.channels, s.key_hashes, s.details, s.provider_message_ids, s.attempts)
      WITH ORDINALITY AS e(message_id, channel, key_hash, detail, provider_message_id, attempts, pos)
    WHERE s.first_offset >= coalesce((SELECT max(h.first_offset) FROM herald.log_statements h
                                      WHERE h.first_offset <= _log_after.after + 1), 0)
      AND s.first_offset + e.pos - 1 > _log_after.after
      AND (e.key_hash & 2147483647) % _log_after.partitions = _log_after.partition
    ORDER BY s.first_offset, e.pos
    LIMIT _log_after.max
  ) o
  -- The subquery's order, which the planner knows it has: no second sort.
  ORDER BY o.first_offset, o.pos
$$;

REVOKE ALL ON FUNCTION herald._log_after(bigint, integer, integer, integer) FROM PUBLIC;
COMMENT ON FUNCTION herald._log_after(bigint, integer, integer, integer) IS
  'Private: the events of one partition after an offset, in order, through log_statements_offset_idx.';
