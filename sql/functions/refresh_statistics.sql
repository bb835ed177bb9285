-- herald.refresh_statistics() — ANALYZE herald.messages and herald.log_statements
-- when the planner's statistics still describe a small table and the table has
-- since grown past twice that size; returns the names of the tables it analyzed
-- (empty when there was nothing to do).
--
-- Why: PL/pgSQL keeps each statement's plan for the life of a connection, and after
-- five calls settles on a generic plan, which it keeps until the table's statistics
-- change. Planned while herald.messages was small (a new install, a TRUNCATE), the
-- runner's statements find rows by scanning the whole table instead of the primary
-- key (claim_batch's UPDATE, complete, fail), and go on doing so while the table
-- grows, until autovacuum first analyzes it: up to autovacuum_naptime (1 minute by
-- default) later, or never with autovacuum off. At 1,000 messages a second a claim
-- took 7 ms after 20 seconds instead of 1.5 ms. ANALYZE gives the table new
-- statistics, and every connection replans its statements at their next use.
-- Rule: a table whose pg_class.relpages (its size at its last VACUUM or ANALYZE) is
-- under 1,024 pages (8 MB) is analyzed once its size is over twice relpages, and at
-- least 16 pages: so at 16, 32, 64 … pages while it is small, and never once its
-- statistics say 8 MB or more (by then every plan of these statements reads an index,
-- and keeping statistics current is autovacuum's work).
-- Cost: one pg_class read and one file size per table when nothing is to be done;
-- an ANALYZE of at most 16 MB when something is.
-- Locks: SHARE UPDATE EXCLUSIVE on a table it analyzes (it conflicts with no reads
-- or writes), taken with NOWAIT: a table that a VACUUM or another ANALYZE holds is
-- left for the next call. Call it in autocommit: the lock lasts until the
-- transaction ends. The runner calls it every poll interval; a runner in another
-- language should too (about once a second).
-- SECURITY DEFINER (ANALYZE takes the table's owner) for herald_worker.
CREATE OR REPLACE FUNCTION herald.refresh_statistics()
RETURNS text[]
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  t regclass;
  done text[] := '{}';
BEGIN
  FOR t IN
    SELECT c.oid::regclass
    FROM pg_class c
    WHERE c.oid IN ('herald.messages'::regclass, 'herald.log_statements'::regclass)
      AND c.relpages < 1024
      AND pg_relation_size(c.oid) / current_setting('block_size')::bigint
          > greatest(2 * c.relpages, 16)
    ORDER BY c.relname DESC -- messages first: it matters most
  LOOP
    BEGIN
      EXECUTE format('LOCK TABLE %s IN SHARE UPDATE EXCLUSIVE MODE NOWAIT', t);
    EXCEPTION WHEN lock_not_available THEN
      CONTINUE;
    END;
    EXECUTE format('ANALYZE %s', t);
    done := done || t::text;
  END LOOP;
  RETURN done;
END
$$;

REVOKE ALL ON FUNCTION herald.refresh_statistics() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.refresh_statistics() TO herald_worker, herald_admin;
