-- 003_log.sql — the ordered log of lifecycle events and its consumer groups.
--
-- The functions that make a transition (enqueue, complete, fail, reap_stale, cancel)
-- append one herald.log_statements row per statement, its events as parallel arrays
-- in message id order, without touching a shared row. herald.log_sequence later
-- gives committed rows their offsets under the herald.log_counter row lock: offsets
-- are gapless and become visible in order. The view herald.log (sql/functions/log.sql)
-- shows one row per event. docs/log.md explains the design and its trade-offs.

CREATE TABLE herald.log_statements (
  seq                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind                 text NOT NULL,
  at                   timestamptz NOT NULL,
  message_ids          bigint[] NOT NULL,
  channels             text[] NOT NULL,
  key_hashes           integer[] NOT NULL,
  details              jsonb[],
  first_offset         bigint,
  provider_message_ids text[],
  attempts             integer[]
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_vacuum_cost_delay = 0);
COMMENT ON TABLE herald.log_statements IS
  'Lifecycle events, one row per statement that wrote them; first_offset is NULL until herald.log_sequence gives the row its offsets. herald.log shows one row per event.';
COMMENT ON COLUMN herald.log_statements.details IS 'Event i''s detail; NULL when every event''s detail is {} or is built from the typed arrays.';
COMMENT ON COLUMN herald.log_statements.first_offset IS
  'Offset of the first event (event i, counted from 1, has first_offset + i - 1); NULL while pending.';
COMMENT ON COLUMN herald.log_statements.provider_message_ids IS
  'sent events: the provider message id of event i (NULL: none); NULL when no event of the row has one.';
COMMENT ON COLUMN herald.log_statements.attempts IS
  'sent events: the attempts of event i; with it set, details is NULL and each event''s detail is built when read.';
-- No herald statement filters on the arrays (they are unnested and read by position):
-- no planner statistics, so ANALYZE does not read every element.
ALTER TABLE herald.log_statements
  ALTER COLUMN message_ids SET STATISTICS 0,
  ALTER COLUMN channels SET STATISTICS 0,
  ALTER COLUMN key_hashes SET STATISTICS 0,
  ALTER COLUMN details SET STATISTICS 0,
  ALTER COLUMN provider_message_ids SET STATISTICS 0,
  ALTER COLUMN attempts SET STATISTICS 0;
-- Large rows are compressed on their way into TOAST: lz4 where the server has it.
DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_settings
             WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
    ALTER TABLE herald.log_statements
      ALTER COLUMN message_ids SET COMPRESSION lz4,
      ALTER COLUMN channels SET COMPRESSION lz4,
      ALTER COLUMN key_hashes SET COMPRESSION lz4,
      ALTER COLUMN details SET COMPRESSION lz4,
      ALTER COLUMN provider_message_ids SET COMPRESSION lz4,
      ALTER COLUMN attempts SET COMPRESSION lz4;
  END IF;
END
$$;
-- log_read, log_truncate: sequenced rows in offset order.
CREATE UNIQUE INDEX log_statements_offset_idx ON herald.log_statements (first_offset)
  WHERE first_offset IS NOT NULL;
-- log_sequence: pending rows in the order they were written.
CREATE INDEX log_statements_pending_idx ON herald.log_statements (seq)
  WHERE first_offset IS NULL;

-- The one counter row: the next offset to hand out. Locked only by log_sequence.
CREATE TABLE herald.log_counter (
  singleton   boolean PRIMARY KEY DEFAULT true,
  next_offset bigint NOT NULL DEFAULT 1,
  CONSTRAINT log_counter_singleton CHECK (singleton)
);
INSERT INTO herald.log_counter DEFAULT VALUES;
COMMENT ON TABLE herald.log_counter IS 'Next log offset; its row lock serialises sequencing runs.';

CREATE TABLE herald.consumer_groups (
  name       text PRIMARY KEY,
  partitions integer NOT NULL,
  created_at timestamptz NOT NULL,
  CONSTRAINT consumer_groups_name_format CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$'),
  CONSTRAINT consumer_groups_partitions_range CHECK (partitions BETWEEN 1 AND 256)
);
COMMENT ON TABLE herald.consumer_groups IS 'Consumer groups of herald.log and their partition counts.';

-- Every event of the partition up to committed_offset is acknowledged. log_read locks
-- the row, which keeps two consumers of a group off one partition.
CREATE TABLE herald.consumer_offsets (
  group_name       text NOT NULL REFERENCES herald.consumer_groups (name) ON DELETE CASCADE,
  partition        integer NOT NULL,
  committed_offset bigint NOT NULL,
  updated_at       timestamptz NOT NULL,
  PRIMARY KEY (group_name, partition),
  CONSTRAINT consumer_offsets_committed_nonnegative CHECK (committed_offset >= 0)
);
COMMENT ON TABLE herald.consumer_offsets IS 'Committed offset per consumer group and partition.';

-- Events a group set aside with log_dead_letter (a copy; the log keeps the original).
CREATE TABLE herald.consumer_dead_letters (
  group_name text NOT NULL REFERENCES herald.consumer_groups (name) ON DELETE CASCADE,
  partition  integer NOT NULL,
  "offset"   bigint NOT NULL,
  message_id bigint NOT NULL,
  kind       text NOT NULL,
  channel    text NOT NULL,
  at         timestamptz NOT NULL,
  detail     jsonb NOT NULL,
  error      text NOT NULL,
  dead_at    timestamptz NOT NULL,
  PRIMARY KEY (group_name, "offset")
);
COMMENT ON TABLE herald.consumer_dead_letters IS 'Log events a consumer group could not process, with the error.';

-- The last time (µs since the epoch) a transaction notified herald_log; 0 when a
-- listener has started waiting since. See herald.notify_clock_queue.
CREATE SEQUENCE herald.notify_clock_log AS bigint MINVALUE 0 START 0;
COMMENT ON SEQUENCE herald.notify_clock_log IS 'Time of the last herald_log NOTIFY (µs), 0 when a listener waits.';

GRANT ALL ON ALL TABLES IN SCHEMA herald TO herald_admin;
GRANT ALL ON ALL SEQUENCES IN SCHEMA herald TO herald_admin;
GRANT SELECT ON herald.consumer_offsets, herald.consumer_groups, herald.consumer_dead_letters TO herald_consumer;
