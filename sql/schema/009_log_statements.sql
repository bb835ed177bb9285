-- 009_log_statements.sql — the ordered log keeps one row per writing statement.
--
-- Until release 3, herald.log_sequence moved each pending statement's events out of
-- herald.log_pending into herald.log, one row per event: about 4 µs of the
-- sequencer's time per event, half the cost of a receipt. Now the statement's row
-- stays where the producer wrote it and sequencing only gives it its offsets:
--
--   herald.log_statements  (was herald.log_pending) one row per statement that
--                          wrote events, its events as parallel arrays in id order;
--                          first_offset is NULL while the row waits for its offsets
--                          and then the offset of its first event (event i, from 1,
--                          has first_offset + i - 1).
--   herald.log             a view (sql/functions/log.sql) with one row per event,
--                          as the table of the same name had.
--
-- Sequencing is an UPDATE of first_offset on one row per statement; the arrays,
-- stored out of line (TOAST), are not copied. Readers (herald.log_read) find the
-- statement holding the next offset through log_statements_offset_idx and expand
-- rows in offset order.
--
-- Events already sequenced move into log_statements as one-event rows with their
-- offsets; pending ones keep their rows. The code installed by 008_code.sql refers
-- to herald.log_pending and herald.log as a table: run 010_code.sql (herald migrate
-- runs both) before producers and consumers use the database again.
DROP VIEW IF EXISTS herald.consumer_lag; -- reads log_pending; 010_code.sql creates it anew

ALTER TABLE herald.log_pending RENAME TO log_statements;
ALTER TABLE herald.log_statements RENAME CONSTRAINT log_pending_pkey TO log_statements_pkey;
ALTER SEQUENCE herald.log_pending_seq_seq RENAME TO log_statements_seq_seq;
ALTER TABLE herald.log_statements ADD COLUMN first_offset bigint;
COMMENT ON TABLE herald.log_statements IS
  'Lifecycle events, one row per statement that wrote them; first_offset is NULL until herald.log_sequence gives the row its offsets. herald.log shows one row per event.';
COMMENT ON COLUMN herald.log_statements.first_offset IS
  'Offset of the first event (event i, counted from 1, has first_offset + i - 1); NULL while pending.';

-- Sequenced rows in offset order (log_read, log_truncate); pending rows in the order
-- they were written (log_sequence).
CREATE UNIQUE INDEX log_statements_offset_idx ON herald.log_statements (first_offset)
  WHERE first_offset IS NOT NULL;
CREATE INDEX log_statements_pending_idx ON herald.log_statements (seq)
  WHERE first_offset IS NULL;

INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes, details, first_offset)
SELECT l.kind, l.at, ARRAY[l.message_id], ARRAY[l.channel], ARRAY[l.key_hash], ARRAY[l.detail], l."offset"
FROM herald.log l
ORDER BY l."offset";
DROP TABLE herald.log;
