-- 005_log_pending_batches.sql — pending log events, one row per statement.
--
-- Release 1 kept one herald.log_pending row per event: a 1,000-message enqueue_batch
-- or complete wrote 1,000 extra rows and index entries, as much work again as the
-- messages themselves. Now the statement that makes a transition appends one row
-- holding all its events as parallel arrays (element i of message_ids, channels,
-- key_hashes and details is event i, in message id order), with the kind and time
-- they share; herald.log_sequence expands them into herald.log, one offset per event,
-- in (seq, position) order. Pending events of release 1 are carried over, in order.
DROP VIEW IF EXISTS herald.consumer_lag; -- reads log_pending; 006_code.sql creates it anew
ALTER TABLE herald.log_pending RENAME TO log_pending_release1;
ALTER TABLE herald.log_pending_release1 RENAME CONSTRAINT log_pending_pkey TO log_pending_release1_pkey;
ALTER SEQUENCE herald.log_pending_seq_seq RENAME TO log_pending_release1_seq_seq;

CREATE TABLE herald.log_pending (
  seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind        text NOT NULL,
  at          timestamptz NOT NULL,
  message_ids bigint[] NOT NULL,
  channels    text[] NOT NULL,
  key_hashes  integer[] NOT NULL,
  details     jsonb[], -- NULL when every event's detail is {} (accepted, cancelled)
  CONSTRAINT log_pending_kind_known CHECK (kind IN ('accepted', 'sent', 'dead', 'cancelled')),
  CONSTRAINT log_pending_arrays_match CHECK (
    cardinality(message_ids) > 0
    AND cardinality(channels) = cardinality(message_ids)
    AND cardinality(key_hashes) = cardinality(message_ids)
    AND (details IS NULL OR cardinality(details) = cardinality(message_ids)))
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_vacuum_cost_delay = 0);
COMMENT ON TABLE herald.log_pending IS 'Lifecycle events not yet given an offset, one row per statement; drained by herald.log_sequence.';

INSERT INTO herald.log_pending (kind, at, message_ids, channels, key_hashes, details)
SELECT p.kind, p.at, ARRAY[p.message_id], ARRAY[p.channel], ARRAY[p.key_hash], ARRAY[p.detail]
FROM herald.log_pending_release1 p
ORDER BY p.seq;
DROP TABLE herald.log_pending_release1;

GRANT ALL ON herald.log_pending TO herald_admin;
GRANT ALL ON SEQUENCE herald.log_pending_seq_seq TO herald_admin;
