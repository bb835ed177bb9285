-- herald.refresh_statistics() — ANALYZE herald.messages and herald.log_statements when
-- their statistics still describe a small table (pg_class.relpages under 1,024 pages)
-- and the table has grown past twice that size (and 16 pages); returns the tables
-- analyzed, empty when there was nothing to do.
-- Why: a connection keeps its plans until statistics change, and a plan made while a
-- table was small scans it instead of reading an index (docs/tuning.md). Once the
-- statistics say 8 MB it does nothing: autovacuum keeps them current.
-- Cost: one pg_class read and one file size per table when nothing is to be done.
-- Locks: SHARE UPDATE EXCLUSIVE on a table it analyzes, taken with NOWAIT (a table a
-- VACUUM holds is left for the next call); call it in autocommit, about once a second.
-- SECURITY DEFINER (ANALYZE needs the owner) for herald_worker.
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
COMMENT ON FUNCTION herald.refresh_statistics() IS
  'ANALYZE herald''s tables while their statistics describe a table they have outgrown.';
