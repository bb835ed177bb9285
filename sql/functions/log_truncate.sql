-- herald.log_truncate(before_offset) — retention for herald.log: delete events with
-- an offset below `before_offset`, but never one that some consumer group has not
-- acknowledged (the bound is lowered to one past the smallest committed offset of
-- any group and partition). Returns how many were deleted.
-- Whole herald.log_statements rows below the bound are deleted; the row that holds
-- the bound loses the events before it (its arrays are cut and its first_offset
-- moves up), so the log starts exactly at the bound.
-- Index: log_statements_offset_idx. Locks: the deleted and cut rows.
-- Errors: HR012 before_offset (NULL).
-- Admin only (herald_admin).
CREATE OR REPLACE FUNCTION herald.log_truncate(before_offset bigint)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  bound bigint;
  deleted bigint;
BEGIN
  IF before_offset IS NULL THEN
    PERFORM herald._reject('HR012', 'before_offset', 'must not be NULL');
  END IF;
  SELECT least(before_offset, min(o.committed_offset) + 1) INTO bound FROM herald.consumer_offsets o;
  bound := coalesce(bound, before_offset);
  WITH gone AS (
    DELETE FROM herald.log_statements s
    WHERE s.first_offset < bound
      AND s.first_offset + cardinality(s.message_ids) <= bound
    RETURNING cardinality(s.message_ids) AS events
  )
  SELECT coalesce(sum(g.events), 0) INTO deleted FROM gone g;
  WITH cut AS (
    UPDATE herald.log_statements s
    SET message_ids = s.message_ids[x.k:],
        channels = s.channels[x.k:],
        key_hashes = s.key_hashes[x.k:],
        details = s.details[x.k:],
        provider_message_ids = s.provider_message_ids[x.k:],
        attempts = s.attempts[x.k:],
        first_offset = bound
    FROM (SELECT h.seq, bound - h.first_offset + 1 AS k
          FROM herald.log_statements h
          WHERE h.first_offset < bound
            AND h.first_offset + cardinality(h.message_ids) > bound) x
    WHERE s.seq = x.seq
    RETURNING x.k - 1 AS events
  )
  SELECT deleted + coalesce(sum(c.events), 0) INTO deleted FROM cut c;
  RETURN deleted;
END
$$;

REVOKE ALL ON FUNCTION herald.log_truncate(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.log_truncate(bigint) TO herald_admin;
