-- herald.count_producers(now) — count what the bounded producers' policies are checked
-- against: each producer with a max_pending its unfinished messages (pending), each
-- with a max_bounce_rate or max_complaint_rate its messages sent or dead in the last
-- rate_window and how many of them bounced for good (herald._suppression_reason) or
-- drew a complaint (at most each 60th of the window: rated_at). One over a rate, with
-- at least rate_min_sent sent, is suspended for rate_window (suspended_until,
-- suspended_reason): enqueue refuses it; its queued and held messages due before wait.
-- Returns the producers at their max_pending and those suspended; no row when another
-- call holds the counting lock (advisory 29384939513078786). Runners call it every
-- HERALD_QUOTA_INTERVAL; pg_cron may instead. Index: messages_pending_producer_idx
-- when created (docs/tuning.md), else scans of herald.messages. Locks: the producers'
-- rows, the moved messages, the advisory lock. Errors: 42501 now (herald._check_clock).
-- SECURITY DEFINER.
CREATE OR REPLACE FUNCTION herald.count_producers(now timestamptz DEFAULT now())
RETURNS TABLE (at_max_pending integer, suspended integer)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => count_producers.now); -- first: a forged clock changes nothing
  v_bounded text[] := ARRAY(SELECT p.producer FROM herald.producers p WHERE p.max_pending IS NOT NULL);
  v_rated text[] := ARRAY(SELECT p.producer FROM herald.producers p -- rates move slowly: recounted each 60th of the window
                          WHERE (p.max_bounce_rate IS NOT NULL OR p.max_complaint_rate IS NOT NULL)
                            AND NOT coalesce(p.rated_at > count_producers.now - p.rate_window / 60, false));
  v_suspending text[];
BEGIN
  IF cardinality(v_bounded) + cardinality(v_rated) = 0 THEN
    at_max_pending := 0;
    suspended := 0;
    RETURN NEXT;
    RETURN;
  END IF;
  IF NOT pg_try_advisory_xact_lock(29384939513078786) THEN
    RETURN;
  END IF;
  IF cardinality(v_bounded) > 0 THEN
    UPDATE herald.producers p
    SET pending = coalesce(c.n, 0), counted_at = count_producers.now
    FROM unnest(v_bounded) AS q (producer)
    LEFT JOIN (SELECT m.producer, count(*) AS n
               FROM herald.messages m
               WHERE m.finished_at IS NULL AND m.producer = ANY (v_bounded)
               GROUP BY m.producer) AS c ON c.producer = q.producer
    WHERE p.producer = q.producer;
  END IF;
  IF cardinality(v_rated) > 0 THEN
    WITH counted AS (
      SELECT q.producer, coalesce(c.sent, 0) AS sent, coalesce(c.bounced, 0) AS bounced,
             coalesce(c.complained, 0) AS complained
      FROM unnest(v_rated) AS q (producer)
      LEFT JOIN (SELECT m.producer, count(*) AS sent,
                        count(*) FILTER (WHERE CASE -- most sent messages have no outcome: no call
                          WHEN m.status = 'sent' THEN m.outcome IS NOT NULL
                               AND herald._suppression_reason(kind => k.kind, event => m.outcome, type => m.outcome_type,
                                                              code => m.outcome_code) = 'bounced'
                          ELSE m.last_error_class = 'permanent'
                               AND herald._suppression_reason(kind => k.kind, event => 'undelivered', type => NULL,
                                                              code => m.last_error_code) = 'bounced'
                          END) AS bounced,
                        count(*) FILTER (WHERE m.outcome = 'complained') AS complained
                 FROM herald.messages m
                 JOIN herald.producers r ON r.producer = m.producer
                 JOIN herald.channels k ON k.name = m.channel
                 WHERE m.producer = ANY (v_rated) AND m.status IN ('sent', 'dead')
                   AND m.finished_at >= count_producers.now - r.rate_window
                 GROUP BY m.producer) AS c ON c.producer = q.producer
    ), rated AS (
      SELECT c.*, p.suspended_until, p.rate_window,
             c.sent >= p.rate_min_sent AND (c.bounced > p.max_bounce_rate * c.sent
                                            OR c.complained > p.max_complaint_rate * c.sent) AS over,
             CASE WHEN c.bounced > p.max_bounce_rate * c.sent
                  THEN format('%s of %s messages in the last %s bounced, over max_bounce_rate %s',
                              c.bounced, c.sent, p.rate_window, p.max_bounce_rate)
                  ELSE format('%s of %s messages in the last %s drew a complaint, over max_complaint_rate %s',
                              c.complained, c.sent, p.rate_window, p.max_complaint_rate)
             END AS reason
      FROM counted c
      JOIN herald.producers p ON p.producer = c.producer
    ), updated AS (
      UPDATE herald.producers p
      SET sent_recent = r.sent, bounced_recent = r.bounced, complained_recent = r.complained,
          rated_at = count_producers.now,
          suspended_until = CASE WHEN r.over AND NOT coalesce(r.suspended_until > count_producers.now, false)
                                 THEN count_producers.now + r.rate_window ELSE p.suspended_until END,
          suspended_reason = CASE WHEN r.over AND NOT coalesce(r.suspended_until > count_producers.now, false)
                                  THEN r.reason ELSE p.suspended_reason END
      FROM rated r
      WHERE p.producer = r.producer
      RETURNING p.producer, r.over AND NOT coalesce(r.suspended_until > count_producers.now, false) AS newly
    )
    SELECT array_agg(u.producer) FILTER (WHERE u.newly) INTO v_suspending FROM updated u;
    IF v_suspending IS NOT NULL THEN -- their due messages wait out the suspension
      UPDATE herald.messages m
      SET run_at = p.suspended_until
      FROM herald.producers p
      WHERE p.producer = ANY (v_suspending) AND m.producer = p.producer
        AND m.status IN ('queued', 'held') AND m.run_at < p.suspended_until; -- a held one keeps it when released
    END IF;
  END IF;
  SELECT count(*) FILTER (WHERE p.pending >= p.max_pending), count(*) FILTER (WHERE p.suspended_until > count_producers.now)
  INTO at_max_pending, suspended
  FROM herald.producers p;
  RETURN NEXT;
END
$$;

REVOKE ALL ON FUNCTION herald.count_producers(timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.count_producers(timestamptz) TO herald_worker, herald_admin;
COMMENT ON FUNCTION herald.count_producers(timestamptz) IS
  'Count the bounded producers'' backlogs and recent bounces and complaints; suspend one over its rates (runners call it periodically).';
