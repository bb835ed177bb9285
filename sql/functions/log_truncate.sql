-- herald.log_truncate(before_offset) — retention for herald.log: delete events with an
-- offset below `before_offset`, never one some consumer group has not acknowledged
-- (the bound is lowered to one past the smallest committed offset). Returns how many
-- were deleted. Rows wholly below the bound are deleted; the row that holds the bound
-- loses the events before it (arrays cut, first_offset moved up), so the log starts
-- exactly at the bound.
-- Index: log_statements_offset_idx: one backward probe finds and locks the only row
-- that can hold the bound, then a range scan deletes the rows below it.
-- Locks: the deleted and cut rows. Errors: 22V12 before_offset (NULL).
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
  held_seq bigint;
  held_first bigint;
  held_events integer;
BEGIN
  IF before_offset IS NULL THEN
    PERFORM herald._reject('22V12', 'before_offset', 'must not be NULL');
  END IF;
  SELECT least(before_offset, min(o.committed_offset) + 1) INTO bound FROM herald.consumer_offsets o;
  bound := coalesce(bound, before_offset);
  -- The only row that can hold the bound is the last to start below it (offsets are
  -- contiguous). Locked first: if a concurrent truncate has cut it meanwhile, this
  -- reads its new first_offset (or no row, when it now starts at or above the bound).
  SELECT h.seq, h.first_offset, cardinality(h.message_ids)
  INTO held_seq, held_first, held_events
  FROM herald.log_statements h
  WHERE h.first_offset < bound
  ORDER BY h.first_offset DESC
  LIMIT 1
  FOR UPDATE;
  deleted := 0;
  IF held_first + held_events > bound THEN
    UPDATE herald.log_statements s
    SET message_ids = s.message_ids[bound - held_first + 1:],
        channels = s.channels[bound - held_first + 1:],
        key_hashes = s.key_hashes[bound - held_first + 1:],
        details = s.details[bound - held_first + 1:],
        provider_message_ids = s.provider_message_ids[bound - held_first + 1:],
        attempts = s.attempts[bound - held_first + 1:],
        first_offset = bound
    WHERE s.seq = held_seq;
    deleted := bound - held_first;
  END IF;
  -- The cut row now starts at the bound, so it is not among these.
  WITH gone AS (
    DELETE FROM herald.log_statements s
    WHERE s.first_offset < bound
      AND s.first_offset + cardinality(s.message_ids) <= bound
    RETURNING cardinality(s.message_ids) AS events
  )
  SELECT deleted + coalesce(sum(g.events), 0) INTO deleted FROM gone g;
  RETURN deleted;
END
$$;

REVOKE ALL ON FUNCTION herald.log_truncate(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.log_truncate(bigint) TO herald_admin;
COMMENT ON FUNCTION herald.log_truncate(bigint) IS
  'Delete log events below an offset that every consumer group acknowledged.';
