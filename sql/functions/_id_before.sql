-- herald._id_before(tab, col, cut) — an id at or below which the rows of tab (a table
-- with a bigint id) whose col (a timestamp set at insert: created_at, received_at) is
-- before cut lie: ids and those times rise together, so a bisection of the primary
-- key finds it in about log2(rows) probes, each reading the 8 rows from its id and
-- counting them before cut when any is. A caller still filters the rows it takes:
-- one stored with a clock ahead of its neighbours' (an admin's `now`) is found by a
-- later call, once cut passes it. 0 for an empty table. Index: tab's primary key.
-- Private (herald.purge).
CREATE OR REPLACE FUNCTION herald._id_before(tab regclass, col name, cut timestamptz)
RETURNS bigint
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  lo bigint;
  hi bigint;
  mid bigint;
  probe_id bigint;
  probe_at timestamptz;
BEGIN
  EXECUTE format('SELECT min(id), max(id) FROM %s', tab) INTO lo, hi;
  IF lo IS NULL THEN
    RETURN 0;
  END IF;
  lo := lo - 1; -- no row below: nothing yet known before cut
  WHILE lo < hi LOOP
    mid := lo + (hi - lo + 1) / 2;
    EXECUTE format('SELECT max(id), min(%1$I) FROM (SELECT id, %1$I FROM %2$s WHERE id >= $1 ORDER BY id LIMIT 8) p', col, tab)
      INTO probe_id, probe_at USING mid;
    IF probe_at < cut THEN
      lo := probe_id;
    ELSE
      hi := mid - 1;
    END IF;
  END LOOP;
  RETURN greatest(lo, 0);
END
$$;

REVOKE ALL ON FUNCTION herald._id_before(regclass, name, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._id_before(regclass, name, timestamptz) IS
  'Private: an id bounding the rows of a table inserted before a time, by bisecting its primary key (herald.purge).';
