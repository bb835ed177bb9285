-- herald._spend_producer(policy, n, now) — count n messages just stored against the
-- producer's budget (herald.producer_buckets) when its herald.producers row has a
-- send_limit: clear_at moves on by send_window / send_limit per message
-- (herald._budget_after), counted at herald._budget_clock. A budget left over the limit (herald._over_budget) refuses
-- the call with 53400 'producer'; the caller's transaction then undoes it all. Called
-- by herald._enqueue after it stored the messages (repeats and suppressed ones count
-- nothing). Index: producer_buckets' primary key. Locks: the producer's row until the
-- transaction ends (a limited producer's enqueues take turns on it).
CREATE OR REPLACE FUNCTION herald._spend_producer(policy herald.producers, n integer, now timestamptz)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
  v_clock timestamptz := herald._budget_clock(now => now);
  v_clear timestamptz;
BEGIN
  INSERT INTO herald.producer_buckets AS b (producer, clear_at)
  VALUES ((policy).producer, herald._budget_after(clear_at => NULL, now => v_clock,
                                                  spent => (policy).send_window / (policy).send_limit * n))
  ON CONFLICT (producer) DO UPDATE
  SET clear_at = herald._budget_after(clear_at => b.clear_at, now => herald._budget_clock(now => _spend_producer.now),
                                      spent => excluded.clear_at - v_clock)
  RETURNING b.clear_at INTO v_clear;
  IF herald._over_budget(clear_at => v_clear, now => herald._budget_clock(now => _spend_producer.now), budget_window => (policy).send_window,
                         budget_limit => (policy).send_limit) > interval '0' THEN
    PERFORM herald._reject(code => '53400', field => 'producer',
      message => format('producer %L may enqueue at most %s messages per %s (its send_limit)',
                        (policy).producer, (policy).send_limit, (policy).send_window),
      hint => 'retry after herald.producer_wait() seconds; an admin raises herald.producers.send_limit');
  END IF;
END
$$;
REVOKE ALL ON FUNCTION herald._spend_producer(herald.producers, integer, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._spend_producer(herald.producers, integer, timestamptz) IS
  'Private: count stored messages against the producer''s budget (producers.send_limit); 53400 producer past it.';
