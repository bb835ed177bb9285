-- herald.producer_wait() — how many seconds until the calling producer
-- (herald._producer(): the role, or the intake's named producer) is let in again:
-- after a suspension for its bounce or complaint rate (herald.producers
-- .suspended_until), or, past its send_limit, until its budget takes one more message
-- (herald.producer_buckets, herald._over_budget); the longer of the two; NULL when
-- neither holds it back. The HTTP intake answers it as Retry-After. A producer learns
-- only its own. Errors: those of herald._producer. Index: producers_pkey,
-- producer_buckets_pkey. Locks: none. SECURITY DEFINER for herald_producer.
CREATE OR REPLACE FUNCTION herald.producer_wait()
RETURNS integer
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT nullif(greatest(ceil(extract(epoch FROM p.suspended_until - now())),
                         ceil(extract(epoch FROM herald._over_budget(
                           clear_at => herald._budget_after(clear_at => b.clear_at, now => now(),
                                                            spent => p.send_window / p.send_limit), now => now(),
                           budget_window => p.send_window, budget_limit => p.send_limit))),
                         0), 0)::integer
  FROM herald.producers p
  LEFT JOIN herald.producer_buckets b ON b.producer = p.producer
  WHERE p.producer = herald._producer()
$$;
REVOKE ALL ON FUNCTION herald.producer_wait() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.producer_wait() TO herald_producer, herald_admin;
COMMENT ON FUNCTION herald.producer_wait() IS
  'Seconds until the calling producer may enqueue again (its suspension, its send_limit); NULL: now.';
