-- herald.log_sequence(max) — give committed pending log events their offsets, from
-- herald.log_counter.next_offset on, in (seq, position) order, whole statement rows
-- only (it stops before a row that would start past `max`, 1..100,000); returns how
-- many events were numbered, 0 at once when another run holds the counter row.
-- The counter row stays locked until the caller's transaction ends, which is what
-- makes offsets visible in order: call it in autocommit (READ COMMITTED; under
-- REPEATABLE READ a concurrent run raises 40001). A rollback hands the offsets out
-- again. A malformed row (unknown kind, arrays of different lengths) stops the run
-- with XX000. Sends NOTIFY herald_log when it numbered anything.
-- Index: log_statements_pending_idx. Locks: the log_counter row, the rows numbered.
-- Errors: 22V12 max. SECURITY DEFINER for herald_worker and herald_consumer.
CREATE OR REPLACE FUNCTION herald.log_sequence(max integer DEFAULT 10000)
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_next bigint;
  moved integer;
  bad bigint;
BEGIN
  IF max IS NULL OR max NOT BETWEEN 1 AND 100000 THEN
    PERFORM herald._reject('22V12', 'max', format('%s is outside 1..100000', coalesce(max::text, 'NULL')));
  END IF;
  SELECT c.next_offset INTO v_next FROM herald.log_counter c FOR UPDATE SKIP LOCKED;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;

  WITH batch AS (
    SELECT r.seq, v_next + r.before AS first_offset
    FROM (SELECT q.seq, sum(cardinality(q.message_ids)) OVER (ORDER BY q.seq) - cardinality(q.message_ids) AS before
          FROM herald.log_statements q
          WHERE q.first_offset IS NULL
          ORDER BY q.seq
          LIMIT log_sequence.max) r -- every statement holds at least one event
    WHERE r.before < log_sequence.max
  ), numbered AS (
    UPDATE herald.log_statements s
    SET first_offset = b.first_offset
    FROM batch b
    WHERE s.seq = b.seq
    RETURNING s.seq, s.kind, cardinality(s.message_ids) AS events,
              cardinality(s.channels) = cardinality(s.message_ids)
                AND cardinality(s.key_hashes) = cardinality(s.message_ids)
                AND (s.details IS NULL OR cardinality(s.details) = cardinality(s.message_ids))
                AND (s.provider_message_ids IS NULL OR cardinality(s.provider_message_ids) = cardinality(s.message_ids))
                AND (s.attempts IS NULL OR cardinality(s.attempts) = cardinality(s.message_ids))
                AND s.kind = ANY (herald._log_kinds()) AS well_formed
  )
  SELECT coalesce(sum(n.events), 0), min(n.seq) FILTER (WHERE NOT n.well_formed)
  INTO moved, bad
  FROM numbered n;
  IF bad IS NOT NULL THEN
    RAISE EXCEPTION 'herald: herald.log_statements row % is malformed (unknown kind or arrays of different lengths)', bad
      USING ERRCODE = 'XX000';
  END IF;

  IF moved > 0 THEN
    UPDATE herald.log_counter SET next_offset = v_next + moved;
    PERFORM pg_notify('herald_log', '');
  END IF;
  RETURN moved;
END
$$;

REVOKE ALL ON FUNCTION herald.log_sequence(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.log_sequence(integer) TO herald_worker, herald_consumer, herald_admin;
COMMENT ON FUNCTION herald.log_sequence(integer) IS
  'Give committed pending log events their gapless offsets; returns how many.';
