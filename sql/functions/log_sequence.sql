-- herald.log_sequence(max) — give offsets to committed pending events: move about
-- `max` (1..100,000) of them from herald.log_pending into herald.log, numbered from
-- herald.log_counter.next_offset on, in order of seq and, within a pending row (the
-- events of one statement, migration 005), of position. Whole rows only: the run
-- stops before a row that would start past `max` events, so it may move more than
-- `max` when one statement made more. Returns how many events were moved.
--
-- Runs are serialised by the counter row: a call that finds it locked (another run
-- in progress) returns 0 at once instead of waiting. The counter row stays locked
-- until the caller's transaction ends, so call it in autocommit (or commit right
-- away): an open transaction that sequenced holds back every later offset until it
-- commits — which is exactly what keeps offsets visible in order. If that transaction
-- rolls back, its events return to pending and its offsets are handed out again.
-- Only events already committed are seen, so a producer transaction that stays open
-- never blocks the log: its events get offsets after it commits.
-- Sends NOTIFY herald_log when it moved anything. Called by herald.log_read, and
-- periodically by the runner; call it from cron when neither runs.
-- Index: log_pending_pkey (seq). Locks: the log_counter row; ROW EXCLUSIVE on
-- herald.log and herald.log_pending. Errors: HR012 max. Use READ COMMITTED: under
-- REPEATABLE READ a concurrent run makes the counter lock fail with 40001.
-- SECURITY DEFINER for herald_worker and herald_consumer.
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
BEGIN
  IF max IS NULL OR max NOT BETWEEN 1 AND 100000 THEN
    PERFORM herald._reject('HR012', 'max', format('%s is outside 1..100000', coalesce(max::text, 'NULL')));
  END IF;
  SELECT c.next_offset INTO v_next FROM herald.log_counter c FOR UPDATE SKIP LOCKED;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;

  WITH batch AS (
    DELETE FROM herald.log_pending p
    WHERE p.seq IN (
      SELECT r.seq
      FROM (SELECT q.seq, sum(cardinality(q.message_ids)) OVER (ORDER BY q.seq) - cardinality(q.message_ids) AS before
            FROM herald.log_pending q
            ORDER BY q.seq
            LIMIT log_sequence.max) r -- every statement holds at least one event
      WHERE r.before < log_sequence.max)
    RETURNING p.*
  )
  INSERT INTO herald.log ("offset", message_id, kind, channel, key_hash, at, detail)
  SELECT v_next + row_number() OVER (ORDER BY b.seq, e.pos) - 1, e.message_id, b.kind, e.channel,
         e.key_hash, b.at, coalesce(e.detail, '{}')
  FROM batch b,
       unnest(b.message_ids, b.channels, b.key_hashes, b.details)
         WITH ORDINALITY AS e(message_id, channel, key_hash, detail, pos);
  GET DIAGNOSTICS moved = ROW_COUNT;

  IF moved > 0 THEN
    UPDATE herald.log_counter SET next_offset = v_next + moved;
    PERFORM pg_notify('herald_log', '');
  END IF;
  RETURN moved;
END
$$;

REVOKE ALL ON FUNCTION herald.log_sequence(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.log_sequence(integer) TO herald_worker, herald_consumer, herald_admin;
