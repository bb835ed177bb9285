-- herald._held(specs, producer, barred) — which messages of one enqueue call
-- (herald._enqueue) are stored 'held': those with an ordering key behind a pending (not
-- finished) message of the producer's key, or behind an earlier spec of the call
-- with that key (specs at the input positions `barred`, stored suppressed, do not
-- count). Returns one boolean per spec, in input order. First locks the newest pending
-- message of each key FOR KEY SHARE until the transaction ends: should it finish
-- before then, its exit sees the lock and notes the key for herald.reap_stale
-- (herald._release_after). The lock stops no claim or report; it waits
-- only for an exit that already checked for it, and the check that follows (a new
-- statement) sees that exit. Under REPEATABLE READ or SERIALIZABLE no statement sees
-- it, so nothing is held behind a stored message there (claims still keep the order).
-- Generic plan (a custom plan was made at every call). Index:
-- messages_ordering_key_idx. Locks: those rows, FOR KEY SHARE.
CREATE OR REPLACE FUNCTION herald._held(specs herald.message_spec[], producer text, barred bigint[])
RETURNS boolean[]
LANGUAGE plpgsql
VOLATILE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_held boolean[];
  v_keys text[]; -- the call's ordering keys
  v_pending text[]; -- those with a pending message
BEGIN
  IF current_setting('transaction_isolation') = 'read committed' THEN
    IF cardinality(specs) = 1 THEN
      v_keys := ARRAY[(specs[1]).ordering_key];
    ELSE
      v_keys := ARRAY(SELECT DISTINCT s.ordering_key FROM unnest(specs) AS s WHERE s.ordering_key IS NOT NULL);
    END IF;
    PERFORM FROM unnest(v_keys) AS d (k)
    CROSS JOIN LATERAL (SELECT FROM herald.messages e
                        WHERE e.producer = _held.producer AND e.ordering_key = d.k AND e.finished_at IS NULL
                        ORDER BY e.id DESC LIMIT 1 FOR KEY SHARE) AS p;
    IF FOUND THEN -- a new statement: it sees the exits the lock waited for
      -- A scalar subquery, not EXISTS: a probe per key (an EXISTS was planned as a hash
      -- join reading every pending message of the producer).
      SELECT array_agg(d.k) INTO v_pending
      FROM unnest(v_keys) AS d (k)
      WHERE (SELECT true FROM herald.messages e
             WHERE e.producer = _held.producer AND e.ordering_key = d.k AND e.finished_at IS NULL
             LIMIT 1);
    END IF;
  END IF;
  IF cardinality(specs) = 1 THEN -- one message: no earlier one in the call, no window
    RETURN ARRAY[coalesce((specs[1]).ordering_key = ANY (v_pending), false) AND NOT coalesce(1 = ANY (barred), false)];
  END IF;
  SELECT array_agg(x.held ORDER BY x.o) INTO v_held
  FROM (SELECT s.ordinality AS o,
               s.ordering_key IS NOT NULL AND NOT coalesce(s.ordinality = ANY (barred), false)
               AND (count(*) FILTER (WHERE NOT coalesce(s.ordinality = ANY (barred), false))
                      OVER (PARTITION BY s.ordering_key ORDER BY s.ordinality ROWS UNBOUNDED PRECEDING) > 1
                    OR coalesce(s.ordering_key = ANY (v_pending), false)) AS held
        FROM unnest(specs) WITH ORDINALITY AS s) AS x;
  RETURN v_held;
END
$$;

REVOKE ALL ON FUNCTION herald._held(herald.message_spec[], text, bigint[]) FROM PUBLIC;
COMMENT ON FUNCTION herald._held(herald.message_spec[], text, bigint[]) IS
  'Private: lock the newest pending message of each ordering key of an enqueue call, and say which of its messages are held.';
