-- herald._log_after(after, partitions, partition, max) — the first `max` events with
-- an offset above `after` whose key falls in `partition` of `partitions`
-- ((key_hash & 2147483647) % partitions), in offset order. Used by log_read and
-- log_dead_letter. Each event's detail is built as the view herald.log builds it
-- (herald._log_detail: stored JSON, or a 'sent' event's typed receipt and attempts).
-- Of each statement (one holds up to 10,000 events) only the slice a read can return
-- is expanded: from the first event above `after` to the `max`-th event of the
-- partition, found on the key hashes alone when the rest is longer than `max`.
-- Index: log_statements_offset_idx, twice: a backward probe for the statement that
-- holds offset after + 1, then a forward scan from it. The scan yields statements
-- in offset order and an incremental sort orders each one's events, so the LIMIT
-- stops the scan as soon as `max` events are found.
CREATE OR REPLACE FUNCTION herald._log_after(after bigint, partitions integer, partition integer, max integer)
RETURNS TABLE ("offset" bigint, message_id bigint, kind text, channel text, key_hash integer, at timestamptz, detail jsonb)
LANGUAGE sql
STABLE
AS $$
  SELECT o.first_offset + o.a + o.i - 2, o.message_id, o.kind, o.channel, o.key_hash, o.at,
         herald._log_detail(o.kind, o.detail, o.provider_message_id, o.attempts)
  FROM (
    SELECT s.first_offset, r.a, e.i, e.message_id, s.kind, e.channel, e.key_hash, s.at,
           e.detail, e.provider_message_id, e.attempts
    FROM herald.log_statements s
    -- a: the statement's first position above `after`; b: the last one a read can need
    -- (computed once per statement: OFFSET 0 keeps the subquery from being inlined into
    -- each of its uses). A statement a read takes whole is not copied into a slice.
    CROSS JOIN LATERAL (
      SELECT x.a, CASE
               WHEN _log_after.partitions = 1 THEN x.a + _log_after.max - 1
               WHEN cardinality(s.key_hashes) - x.a < _log_after.max THEN cardinality(s.key_hashes)
               ELSE coalesce((SELECT x.a + k.i - 1
                              FROM unnest(s.key_hashes[x.a:]) WITH ORDINALITY AS k (h, i)
                              WHERE (k.h & 2147483647) % _log_after.partitions = _log_after.partition
                              ORDER BY k.i OFFSET _log_after.max - 1 LIMIT 1), cardinality(s.key_hashes))
             END AS b,
             x.a = 1 AND x.a + _log_after.max - 1 >= cardinality(s.key_hashes) AS whole
      FROM (SELECT greatest(1, _log_after.after + 2 - s.first_offset) AS a) AS x
      OFFSET 0) AS r
    CROSS JOIN LATERAL unnest(
        CASE WHEN r.whole THEN s.message_ids ELSE s.message_ids[r.a:r.b] END,
        CASE WHEN r.whole THEN s.channels ELSE s.channels[r.a:r.b] END,
        CASE WHEN r.whole THEN s.key_hashes ELSE s.key_hashes[r.a:r.b] END,
        CASE WHEN r.whole THEN s.details ELSE s.details[r.a:r.b] END,
        CASE WHEN r.whole THEN s.provider_message_ids ELSE s.provider_message_ids[r.a:r.b] END,
        CASE WHEN r.whole THEN s.attempts ELSE s.attempts[r.a:r.b] END)
      WITH ORDINALITY AS e(message_id, channel, key_hash, detail, provider_message_id, attempts, i)
    WHERE s.first_offset >= coalesce((SELECT max(h.first_offset) FROM herald.log_statements h
                                      WHERE h.first_offset <= _log_after.after + 1), 0)
      AND (e.key_hash & 2147483647) % _log_after.partitions = _log_after.partition
    ORDER BY s.first_offset, e.i
    LIMIT _log_after.max
  ) o
  -- The subquery's order, which the planner knows it has: no second sort.
  ORDER BY o.first_offset, o.i
$$;

REVOKE ALL ON FUNCTION herald._log_after(bigint, integer, integer, integer) FROM PUBLIC;
COMMENT ON FUNCTION herald._log_after(bigint, integer, integer, integer) IS
  'Private: the events of one partition after an offset, in order, through log_statements_offset_idx.';
