-- 001_roles.sql — schema herald and its six roles.
--
-- Roles are cluster-wide, so they are created only when missing: several herald
-- databases can share one cluster, and their migrations may run at the same time.
--   herald_producer  enqueue and read the status of its own messages
--   herald_intake    a producer that serves others (the HTTP intake): it may name the
--                    producer it acts for in the setting herald.producer (herald._producer)
--   herald_worker    claim, report, extend leases, reap; read the queue views
--   herald_consumer  read the ordered log as consumer groups
--   herald_events    record providers' delivery events (herald.record_delivery_events)
--   herald_admin     everything in schema herald (member of the five above); the only
--                    role that may pass a clock (`now`) to a function
-- What each role may execute is granted next to each function (sql/functions).

CREATE SCHEMA herald;
COMMENT ON SCHEMA herald IS 'herald: Postgres-native notification queue. Public API: objects without a leading underscore.';

DO $$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['herald_producer', 'herald_intake', 'herald_worker', 'herald_consumer', 'herald_events', 'herald_admin'] LOOP
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = r) THEN
      BEGIN
        EXECUTE format('CREATE ROLE %I NOLOGIN', r);
      EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL; -- created meanwhile by the migration of another database of the cluster
      END;
    END IF;
  END LOOP;
END
$$;

DO $$
BEGIN
  GRANT herald_producer TO herald_intake;
  GRANT herald_producer, herald_intake, herald_worker, herald_consumer, herald_events TO herald_admin;
EXCEPTION WHEN unique_violation THEN
  NULL; -- granted meanwhile by the migration of another database of the cluster
END
$$;

GRANT USAGE ON SCHEMA herald TO herald_producer, herald_intake, herald_worker, herald_consumer, herald_events, herald_admin;
