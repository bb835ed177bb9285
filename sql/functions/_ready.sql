-- herald._ready(channels, caps, n, first, first_lane, from_priority, now) — lock and
-- return up to n ready messages for herald.claim_batch: queued, run_at <= now <
-- expires_at, no earlier message of its producer's ordering_key pending. Priority by
-- priority from from_priority (the lowest queued) upwards; within a priority, channel
-- by channel in turns from channels[first], and within a channel lane by lane in turns
-- from first_lane (a lane: hashtext(producer) & 15, 16 of them), each in (run_at, id)
-- order; channels[i] gives at most caps[i] in all. So a producer's backlog holds back
-- only its lane. FOR NO KEY UPDATE SKIP LOCKED: rows another claim holds are passed
-- over. One statement walks up to the next priority where a channel's lane has a due
-- message (probes of messages_claim_idx: two per lane with entries at that priority in
-- a channel, and one more); each such lane is then one range scan (priority, channel,
-- lane, run_at <= now). PL/pgSQL, planned once per session (claim_batch's
-- generic plan applies). Index: messages_claim_idx, messages_ordering_key_idx. Locks:
-- the returned rows, until the transaction ends.
CREATE OR REPLACE FUNCTION herald._ready(
  channels text[], caps integer[], n integer, first integer, first_lane integer, from_priority integer, now timestamptz
)
RETURNS TABLE (id bigint, channel text, recipient text, priority smallint, run_at timestamptz)
LANGUAGE plpgsql
VOLATILE
AS $$
#variable_conflict use_column
DECLARE
  v_left integer := _ready.n;
  v_caps integer[] := _ready.caps;
  v_priority integer := _ready.from_priority - 1;
  v_due integer[]; -- (channel index - 1) * 16 + lane + 1 of each due lane
  v_k integer := cardinality(_ready.channels);
  v_i integer;
  v_lane integer;
  v_got integer;
BEGIN
  LOOP
    -- The next queued priority in which a lane of a channel with tokens left has a due
    -- message, and those lanes: one statement walks the priorities in between (a
    -- priority that holds only scheduled messages costs probes, not a scan).
    WITH RECURSIVE walk (p, due) AS (
      SELECT v_priority, '{}'::integer[]
      UNION ALL
      SELECT n.p, ARRAY(SELECT (c.i::integer - 1) * 16 + l.lane + 1
                        FROM unnest(_ready.channels, v_caps) WITH ORDINALITY AS c (name, cap, i)
                        -- The lanes with entries at this priority, by a skip scan: a probe
                        -- of messages_claim_idx per lane present, and one more.
                        CROSS JOIN LATERAL (
                          WITH RECURSIVE lanes (lane) AS (
                            SELECT (SELECT hashtext(m.producer) & 15 FROM herald.messages m
                                    WHERE m.status = 'queued' AND m.priority = n.p
                                      AND hashtext(m.channel) = hashtext(c.name) AND m.channel = c.name
                                    ORDER BY hashtext(m.producer) & 15
                                    LIMIT 1)
                            UNION ALL
                            SELECT (SELECT hashtext(m.producer) & 15 FROM herald.messages m
                                    WHERE m.status = 'queued' AND m.priority = n.p
                                      AND hashtext(m.channel) = hashtext(c.name) AND m.channel = c.name
                                      AND (hashtext(m.producer) & 15) > s.lane
                                    ORDER BY hashtext(m.producer) & 15
                                    LIMIT 1)
                            FROM lanes s
                            WHERE s.lane IS NOT NULL
                          )
                          SELECT s.lane FROM lanes s WHERE s.lane IS NOT NULL
                        ) AS l
                        WHERE c.cap >= 1
                          -- A due message in the lane: a scalar subquery in the index's
                          -- order, a probe whatever the statistics.
                          AND (SELECT true FROM herald.messages m
                               WHERE m.status = 'queued' AND m.priority = n.p
                                 AND hashtext(m.channel) = hashtext(c.name) AND m.channel = c.name
                                 AND (hashtext(m.producer) & 15) = l.lane
                                 AND m.run_at <= _ready.now
                               ORDER BY m.run_at
                               LIMIT 1))
      FROM walk w
      CROSS JOIN LATERAL (SELECT min(m.priority) AS p FROM herald.messages m
                          WHERE m.status = 'queued' AND m.priority > w.p) AS n
      WHERE cardinality(w.due) = 0 AND n.p IS NOT NULL
    )
    SELECT w.p, w.due INTO v_priority, v_due FROM walk w WHERE cardinality(w.due) > 0 LIMIT 1;
    EXIT WHEN v_priority IS NULL;
    FOR t IN 0 .. v_k - 1 LOOP
      v_i := (_ready.first - 1 + t) % v_k + 1;
      FOR u IN 0 .. 15 LOOP
        v_lane := (_ready.first_lane + u) % 16;
        CONTINUE WHEN NOT ((v_i - 1) * 16 + v_lane + 1) = ANY (v_due);
        EXIT WHEN v_caps[v_i] < 1;
        RETURN QUERY
        SELECT m.id, m.channel, m.recipient, m.priority, m.run_at
        FROM herald.messages m
        WHERE m.status = 'queued'
          AND m.priority = v_priority
          AND hashtext(m.channel) = hashtext(_ready.channels[v_i]) -- the index's stand-in for the name
          AND m.channel = _ready.channels[v_i]
          AND (hashtext(m.producer) & 15) = v_lane
          AND m.run_at <= _ready.now
          AND m.expires_at > _ready.now
          -- Held messages are not in the index; this check covers the few a race left
          -- queued behind an earlier pending message of their key.
          AND (m.ordering_key IS NULL OR NOT EXISTS (
                SELECT 1 FROM herald.messages e
                WHERE e.producer = m.producer
                  AND e.ordering_key = m.ordering_key
                  AND e.id < m.id
                  AND e.finished_at IS NULL))
        ORDER BY m.run_at, m.id
        LIMIT least(v_left, v_caps[v_i])
        FOR NO KEY UPDATE SKIP LOCKED;
        GET DIAGNOSTICS v_got = ROW_COUNT;
        v_left := v_left - v_got;
        v_caps[v_i] := v_caps[v_i] - v_got;
        IF v_left = 0 THEN
          RETURN;
        END IF;
      END LOOP;
    END LOOP;
  END LOOP;
END
$$;

REVOKE ALL ON FUNCTION herald._ready(text[], integer[], integer, integer, integer, integer, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._ready(text[], integer[], integer, integer, integer, integer, timestamptz) IS
  'Private: lock the next ready messages for claim_batch, priority by priority, channels and producers'' lanes in turns (FOR NO KEY UPDATE SKIP LOCKED).';
