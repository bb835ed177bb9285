-- 002_log.sql — the ordered log of message lifecycle events, consumer groups, and the
-- state of the throttled notifications.
--
-- How offsets are made (see README, "The ordered log"): statement-level triggers on
-- herald.messages append one row per event to herald.log_pending, in the producer's
-- transaction, without touching any shared row. herald.log_sequence (called by
-- log_read, by the runner, or by cron) moves committed pending events into herald.log
-- and gives them the next offsets from herald.log_counter, in one short transaction
-- that holds the counter row: offsets are gapless (only committed events get one,
-- and a rolled-back sequencing run gives its offsets back) and become visible in
-- offset order (runs are serialised by the counter row and each commits as a whole).
--
-- Role herald_consumer: EXECUTE on the log_* functions and create_consumer_group.

DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'herald_consumer') THEN
    CREATE ROLE herald_consumer NOLOGIN;
  END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
  NULL; -- created meanwhile by a migration of another database of the cluster
END
$$;
DO $$
BEGIN
  GRANT herald_consumer TO herald_admin;
EXCEPTION WHEN unique_violation THEN
  NULL; -- granted meanwhile by a migration of another database of the cluster
END
$$;
GRANT USAGE ON SCHEMA herald TO herald_consumer;

-- Events appended by the triggers, waiting for an offset. seq orders them; an event of
-- a message is always appended after that message's earlier events committed, so seq
-- order keeps each message's (and each ordering key's) events in order.
CREATE TABLE herald.log_pending (
  seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  message_id bigint NOT NULL,
  kind       text NOT NULL,
  channel    text NOT NULL,
  key_hash   integer NOT NULL,
  at         timestamptz NOT NULL,
  detail     jsonb NOT NULL DEFAULT '{}'
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_vacuum_cost_delay = 0);
COMMENT ON TABLE herald.log_pending IS 'Lifecycle events not yet given an offset; drained by herald.log_sequence.';

-- The one counter row: the next offset to hand out. Locked only by log_sequence.
CREATE TABLE herald.log_counter (
  singleton   boolean PRIMARY KEY DEFAULT true,
  next_offset bigint NOT NULL DEFAULT 1,
  CONSTRAINT log_counter_singleton CHECK (singleton)
);
INSERT INTO herald.log_counter DEFAULT VALUES;
COMMENT ON TABLE herald.log_counter IS 'Next log offset; its row lock serialises sequencing runs.';

-- The log: gapless offsets from 1. kind: accepted (inserted), sent, dead, cancelled
-- (transitions into those terminal states). key_hash = hashtext(ordering_key, or
-- recipient when there is none): a group with P partitions reads partition
-- (key_hash & 2147483647) % P, so one key's events stay in one partition, in order.
CREATE TABLE herald.log (
  "offset"   bigint PRIMARY KEY,
  message_id bigint NOT NULL,
  kind       text NOT NULL,
  channel    text NOT NULL,
  key_hash   integer NOT NULL,
  at         timestamptz NOT NULL,
  detail     jsonb NOT NULL DEFAULT '{}',
  CONSTRAINT log_kind_known CHECK (kind IN ('accepted', 'sent', 'dead', 'cancelled')),
  CONSTRAINT log_offset_positive CHECK ("offset" > 0)
);
COMMENT ON TABLE herald.log IS 'Ordered, gapless log of message lifecycle events, read by consumer groups.';

CREATE TABLE herald.consumer_groups (
  name       text PRIMARY KEY,
  partitions integer NOT NULL,
  created_at timestamptz NOT NULL,
  CONSTRAINT consumer_groups_name_format CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$'),
  CONSTRAINT consumer_groups_partitions_range CHECK (partitions BETWEEN 1 AND 256)
);
COMMENT ON TABLE herald.consumer_groups IS 'Consumer groups of herald.log and their partition counts.';

-- Progress of each (group, partition): every event of the partition with an offset
-- up to committed_offset has been acknowledged. The row lock taken by log_read keeps
-- two consumers of a group off one partition at the same time.
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

-- Clocks of the throttled notifications (see herald._notify): the last time, in
-- milliseconds since the epoch, a transaction sent a NOTIFY on that channel.
-- Sequences because setval and reading last_value take no row lock and are not
-- rolled back, so producers never wait on one another here.
CREATE SEQUENCE herald.notify_clock_queue AS bigint MINVALUE 0 START 0;
CREATE SEQUENCE herald.notify_clock_log AS bigint MINVALUE 0 START 0;

GRANT ALL ON ALL TABLES IN SCHEMA herald TO herald_admin;
GRANT ALL ON ALL SEQUENCES IN SCHEMA herald TO herald_admin;
GRANT SELECT ON herald.log, herald.consumer_offsets, herald.consumer_groups, herald.consumer_dead_letters TO herald_consumer;
