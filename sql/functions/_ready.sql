-- herald._ready(channels, slots, caps, n, turn, from_priority, bounded, bounds, now) — lock
-- and return up to n ready messages for herald.claim_batch: queued, run_at <= now <
-- expires_at, no earlier message of its producer's ordering_key pending. Priority by
-- priority from from_priority (the lowest queued) upwards; within a priority, channel by
-- channel in turns from channels[turn % k]; within a channel, its due producers (two
-- sharing a hashtext share) share what the channel may give, in turns from the (turn %
-- producers)th, each in (run_at, id) order, a share left by one that had fewer going to
-- those that had more. channels[i] gives at most caps[slots[i]], a cap its channels share
-- (a rerouted channel uses its fallback's); a channel in bounded gives a producer at most
-- herald._producer_bound(bounds[…], its herald.producers.concurrency) less its messages
-- processing. FOR NO KEY UPDATE SKIP LOCKED. One statement walks to the next priority
-- where a channel has a due message, and their due producers; a share is one range scan.
-- Index: messages_claim_idx, messages_ordering_key_idx, messages_in_flight_idx. Locks: the
-- rows; at the first bounded channel it takes from, every bounded channel's advisory lock.
CREATE OR REPLACE FUNCTION herald._ready(
  channels text[], slots integer[], caps integer[], n integer, turn bigint, from_priority integer,
  bounded text[], bounds integer[], now timestamptz
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
  v_due integer[]; -- {channel position, hashtext(producer)} of each due producer
  v_k integer := cardinality(_ready.channels);
  v_i integer;
  v_want integer;    -- what channels[v_i] may give
  v_got integer;     -- what it gave
  v_producers integer[]; -- its due producers (hashtext), in turn order
  v_open integer[];  -- those (positions) that filled their last share
  v_next integer[];
  v_gave integer[]; -- what each producer gave so far
  v_share integer;
  v_took integer;
  v_p integer;
  v_bound integer;  -- channels[v_i]'s producer_concurrency
  v_room_keys text[] := '{}'; -- '<channel position>/<producer hash>' of each bounded producer seen
  v_rooms integer[] := '{}';  -- what each may still be given: the bound less its messages
                              -- being sent and what this claim gave it
  v_room_at integer[]; -- each of v_producers' place in v_rooms
  v_counted integer[] := '{}'; -- the bounded channels (positions) counted
  v_at integer;
  v_locked boolean := false; -- the bounded channels' advisory locks taken
  v_own_hashes integer[]; -- hashtext of the producers with a concurrency of their own
  v_own_bounds integer[];
BEGIN
  LOOP
    -- The next queued priority in which a channel with tokens left has a due message,
    -- and those channels: one statement walks the priorities in between (a priority
    -- that holds only scheduled messages costs a probe per channel and producer, not a
    -- scan).
    WITH RECURSIVE walk (p, due) AS (
      SELECT v_priority, '{}'::integer[]
      UNION ALL
      SELECT n.p, ARRAY(SELECT ARRAY[c.i::integer, d.h]
                        FROM unnest(_ready.channels, _ready.slots) WITH ORDINALITY AS c (name, slot, i)
                        CROSS JOIN LATERAL (
                          -- The channel's producers: a probe of the index per producer
                          -- with queued messages in the priority (its earliest entry
                          -- says whether it is due), and one more.
                          WITH RECURSIVE producer (h, due) AS (
                            (SELECT hashtext(m.producer), m.run_at <= _ready.now
                             FROM herald.messages m
                             WHERE m.status = 'queued' AND m.priority = n.p
                               AND hashtext(m.channel) = hashtext(c.name) AND m.channel = c.name
                             ORDER BY hashtext(m.producer), m.run_at
                             LIMIT 1)
                            UNION ALL
                            SELECT x.h, x.due
                            FROM producer q
                            CROSS JOIN LATERAL (
                              SELECT hashtext(m.producer) AS h, m.run_at <= _ready.now AS due
                              FROM herald.messages m
                              WHERE m.status = 'queued' AND m.priority = n.p
                                AND hashtext(m.channel) = hashtext(c.name) AND m.channel = c.name
                                AND hashtext(m.producer) > q.h
                              ORDER BY hashtext(m.producer), m.run_at
                              LIMIT 1) AS x
                          )
                          SELECT producer.h FROM producer WHERE producer.due) AS d
                        WHERE v_caps[c.slot] >= 1
                        ORDER BY c.i, d.h)
      FROM walk w
      CROSS JOIN LATERAL (SELECT min(m.priority) AS p FROM herald.messages m
                          WHERE m.status = 'queued' AND m.priority > w.p) AS n
      WHERE cardinality(w.due) = 0 AND n.p IS NOT NULL
    )
    SELECT w.p, w.due INTO v_priority, v_due FROM walk w WHERE cardinality(w.due) > 0 LIMIT 1;
    EXIT WHEN v_priority IS NULL;
    FOR t IN 0 .. v_k - 1 LOOP
      v_i := ((_ready.turn % v_k)::integer + t) % v_k + 1;
      v_want := least(v_left, v_caps[_ready.slots[v_i]]);
      CONTINUE WHEN v_want < 1;
      v_producers := ARRAY(SELECT v_due[d][2] FROM generate_subscripts(v_due, 1) AS d WHERE v_due[d][1] = v_i);
      v_p := cardinality(v_producers);
      CONTINUE WHEN v_p = 0;
      v_producers := v_producers[(_ready.turn % v_p)::integer + 1 :] || v_producers[: (_ready.turn % v_p)::integer];
      v_bound := _ready.bounds[array_position(_ready.bounded, _ready.channels[v_i])];
      IF v_bound IS NULL THEN
        v_open := ARRAY(SELECT generate_series(1, v_p));
      ELSE
        -- Each producer's room: its messages being sent on the channel counted once
        -- per claim (its range of messages_in_flight_idx), less what the claim gave it.
        IF NOT v_locked THEN
          -- One claim at a time counts and takes the bounded channels' messages: at
          -- the first it visits, it locks them all, in hash order (no deadlock).
          PERFORM pg_advisory_xact_lock(1213612877, b.h)
          FROM (SELECT hashtext(x) AS h FROM unnest(_ready.bounded) AS x ORDER BY 1) AS b;
          v_locked := true;
          SELECT array_agg(hashtext(p.producer)), array_agg(p.concurrency) INTO v_own_hashes, v_own_bounds
          FROM herald.producers p
          WHERE p.concurrency IS NOT NULL;
        END IF;
        IF NOT v_i = ANY (v_counted) THEN
          v_counted := v_counted || v_i;
          SELECT v_room_keys || coalesce(array_agg(v_i || '/' || k.h), '{}'),
                 v_rooms || coalesce(array_agg(herald._producer_bound(v_bound, v_own_bounds[array_position(v_own_hashes, k.h)]) - k.n), '{}')
          INTO v_room_keys, v_rooms
          FROM (SELECT hashtext(m.producer) AS h, count(*)::integer AS n
                FROM herald.messages m
                WHERE m.status = 'processing' AND m.channel = _ready.channels[v_i]
                GROUP BY 1) AS k;
        END IF;
        v_room_at := '{}';
        FOR q IN 1 .. v_p LOOP
          v_at := array_position(v_room_keys, v_i || '/' || v_producers[q]);
          IF v_at IS NULL THEN -- none being sent
            v_room_keys := v_room_keys || (v_i || '/' || v_producers[q]);
            v_rooms := v_rooms || herald._producer_bound(v_bound, v_own_bounds[array_position(v_own_hashes, v_producers[q])]);
            v_at := cardinality(v_rooms);
          END IF;
          v_room_at := v_room_at || v_at;
        END LOOP;
        v_open := ARRAY(SELECT q FROM generate_series(1, v_p) AS q WHERE v_rooms[v_room_at[q]] > 0);
      END IF;
      v_gave := array_fill(0, ARRAY[v_p]);
      v_got := 0;
      -- Rounds: each open producer takes its share of what is left (more than an
      -- equal one when those before it had fewer); one that filled its share stays
      -- open for the next round, which passes over the rows it gave (OFFSET: they
      -- are locked by this claim, so SKIP LOCKED keeps them). Should the rows before
      -- them change in between (a claim rolled back, an earlier run_at committed), a
      -- row may come twice or one be locked and not returned: claim_batch takes each
      -- id once, and the rest stays queued.
      WHILE cardinality(v_open) > 0 AND v_got < v_want LOOP
        v_next := '{}';
        FOR j IN 1 .. cardinality(v_open) LOOP
          EXIT WHEN v_got = v_want;
          v_share := ceil((v_want - v_got)::numeric / (cardinality(v_open) - j + 1));
          IF v_bound IS NOT NULL THEN
            v_share := least(v_share, v_rooms[v_room_at[v_open[j]]] - v_gave[v_open[j]]);
          END IF;
          -- OFFSET outside: the scan's plan is the one a LIMIT alone gets (with an
          -- OFFSET parameter, the generic plan's guess of it can prefer a sort).
          RETURN QUERY
            SELECT s.id, s.channel, s.recipient, s.priority, s.run_at
            FROM (
              SELECT m.id, m.channel, m.recipient, m.priority, m.run_at
              FROM herald.messages m
              WHERE m.status = 'queued'
                AND m.priority = v_priority
                AND hashtext(m.channel) = hashtext(_ready.channels[v_i]) -- the index's stand-in for the name
                AND m.channel = _ready.channels[v_i]
                AND hashtext(m.producer) = v_producers[v_open[j]]
                AND m.run_at <= _ready.now
                AND m.expires_at > _ready.now
                -- Held messages are not in the index; this check covers the few a race
                -- left queued behind an earlier pending message of their key.
                AND (m.ordering_key IS NULL OR NOT EXISTS (
                      SELECT 1 FROM herald.messages e
                      WHERE e.producer = m.producer
                        AND e.ordering_key = m.ordering_key
                        AND e.id < m.id
                        AND e.finished_at IS NULL))
              ORDER BY m.run_at, m.id
              LIMIT v_gave[v_open[j]] + v_share
              FOR NO KEY UPDATE SKIP LOCKED) AS s
            OFFSET v_gave[v_open[j]];
          GET DIAGNOSTICS v_took = ROW_COUNT;
          v_gave[v_open[j]] := v_gave[v_open[j]] + v_took;
          IF v_took = v_share AND (v_bound IS NULL OR v_gave[v_open[j]] < v_rooms[v_room_at[v_open[j]]]) THEN
            v_next := v_next || v_open[j];
          END IF;
          v_got := v_got + v_took;
        END LOOP;
        v_open := v_next;
      END LOOP;
      IF v_bound IS NOT NULL THEN
        FOR q IN 1 .. v_p LOOP
          v_rooms[v_room_at[q]] := v_rooms[v_room_at[q]] - v_gave[q];
        END LOOP;
      END IF;
      v_left := v_left - v_got;
      v_caps[_ready.slots[v_i]] := v_caps[_ready.slots[v_i]] - v_got;
      IF v_left = 0 THEN
        RETURN;
      END IF;
    END LOOP;
  END LOOP;
END
$$;

REVOKE ALL ON FUNCTION herald._ready(text[], integer[], integer[], integer, bigint, integer, text[], integer[], timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._ready(text[], integer[], integer[], integer, bigint, integer, text[], integer[], timestamptz) IS
  'Private: lock the next ready messages for claim_batch, priority by priority, channels and their producers in turns (FOR NO KEY UPDATE SKIP LOCKED).';
