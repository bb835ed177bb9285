-- 007_log_pending_unchecked.sql — herald.log_pending without CHECK constraints.
--
-- Every producer's statement writes one log_pending row, and PostgreSQL builds each
-- CHECK constraint of a table anew for every statement that writes to it: the two
-- checks of 005 cost about a tenth of single-row enqueue throughput (measured with
-- pgbench, README "Performance"). Their rules still hold, enforced where they cannot
-- be skipped:
--   * only herald's functions write log_pending (producers, workers and consumers
--     have no privilege on it), and they build each row from one statement's
--     RETURNING rows, so its arrays have one element per event;
--   * herald.log_sequence copies every event into herald.log, whose NOT NULL columns
--     and CHECK log_kind_known reject an unknown kind or arrays of different
--     lengths (unnest pads the shorter ones with NULL): a bad row stops the
--     sequencer with an error instead of entering the log.
ALTER TABLE herald.log_pending
  DROP CONSTRAINT log_pending_kind_known,
  DROP CONSTRAINT log_pending_arrays_match;
