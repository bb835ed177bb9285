-- herald.purge(older_than, now, batch_size) — retention, one batch at a time: delete
-- at most batch_size each of finished messages (sent, dead, cancelled, expired,
-- suppressed) finished more than `older_than` ago, delivery events received before
-- that, and recipients' and producers' budgets whole again. Returns the most rows it
-- deleted of any one of those: call it again, each call a transaction of its own,
-- while that is batch_size. From cron or pg_cron, e.g. herald.purge('30 days'). A
-- replay of a purged event is stored again as unknown. Index: messages_pkey and
-- delivery_events_pkey, the range of ids inserted before the bound
-- (herald._id_before), so a call reads what may be old enough, not the rows kept
-- (messages_finished_idx of docs/tuning.md narrows it to finished ones). Locks: the
-- deleted rows. Errors: 22V12 older_than (NULL or negative), batch_size
-- (1..1,000,000). Admin only (herald_admin).
CREATE OR REPLACE FUNCTION herald.purge(older_than interval, now timestamptz DEFAULT now(), batch_size integer DEFAULT 10000)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => purge.now); -- first: a forged clock changes nothing
  v_messages bigint;
  v_events bigint;
  v_recipients bigint;
  v_producers bigint;
  v_cut timestamptz;
  v_upto bigint;
BEGIN
  IF older_than IS NULL OR older_than < interval '0' THEN
    PERFORM herald._reject('22V12', 'older_than', 'must be a non-negative interval');
  END IF;
  IF batch_size IS NULL OR batch_size NOT BETWEEN 1 AND 1000000 THEN
    PERFORM herald._reject('22V12', 'batch_size', format('%s is outside 1..1000000', batch_size));
  END IF;
  v_cut := purge.now - purge.older_than;
  -- A message finished before the bound was created before it.
  v_upto := herald._id_before(tab => 'herald.messages', col => 'created_at', cut => v_cut);
  DELETE FROM herald.messages m
  WHERE m.ctid = ANY (ARRAY(SELECT f.ctid FROM herald.messages f
                            WHERE f.id <= v_upto AND f.finished_at < v_cut ORDER BY f.id LIMIT purge.batch_size));
  GET DIAGNOSTICS v_messages = ROW_COUNT;
  v_upto := herald._id_before(tab => 'herald.delivery_events', col => 'received_at', cut => v_cut);
  DELETE FROM herald.delivery_events d
  WHERE d.ctid = ANY (ARRAY(SELECT e.ctid FROM herald.delivery_events e
                            WHERE e.id <= v_upto AND e.received_at < v_cut ORDER BY e.id LIMIT purge.batch_size));
  GET DIAGNOSTICS v_events = ROW_COUNT;
  -- Budgets whole again: as if absent.
  DELETE FROM herald.recipient_buckets b
  WHERE b.ctid = ANY (ARRAY(SELECT r.ctid FROM herald.recipient_buckets r WHERE r.clear_at <= purge.now LIMIT purge.batch_size));
  GET DIAGNOSTICS v_recipients = ROW_COUNT;
  DELETE FROM herald.producer_buckets b
  WHERE b.ctid = ANY (ARRAY(SELECT p.ctid FROM herald.producer_buckets p WHERE p.clear_at <= purge.now LIMIT purge.batch_size));
  GET DIAGNOSTICS v_producers = ROW_COUNT;
  RETURN greatest(v_messages, v_events, v_recipients, v_producers);
END
$$;

REVOKE ALL ON FUNCTION herald.purge(interval, timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.purge(interval, timestamptz, integer) TO herald_admin;
COMMENT ON FUNCTION herald.purge(interval, timestamptz, integer) IS
  'Delete up to a batch each of finished messages and delivery events older than a bound and of budgets whole again; call again while it returns the batch size.';
