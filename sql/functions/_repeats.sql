-- herald._repeats(specs, policy, ids, now) — the idempotency keys of one enqueue call
-- of policy's producer (herald._enqueue; ids: the ids drawn for the specs, in input
-- order). Locks each key (pg_advisory_xact_lock(1213612876, hashtext(key)), in
-- hash order, until the transaction ends), then returns the repeats: `positions`, the
-- input positions of specs whose key the producer stored before or an earlier spec of
-- the call carries; `first_ids`, the id answering each; `valid`, whether every repeat
-- passes herald._valid for the producer's policy (a repeat is still checked).
-- NULL positions: no repeat. Runs under the generic plan: a custom plan (chosen for
-- small calls, the array's length being known) was planned anew at every call.
-- Index: messages_idempotency_key_idx.
CREATE OR REPLACE FUNCTION herald._repeats(
  specs herald.message_spec[], policy herald.producers, ids bigint[], now timestamptz,
  OUT positions bigint[], OUT first_ids bigint[], OUT valid boolean)
LANGUAGE plpgsql
VOLATILE
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(1213612876, h)
  FROM (SELECT DISTINCT hashtext(s.idempotency_key) AS h FROM unnest(specs) AS s
        WHERE s.idempotency_key IS NOT NULL ORDER BY 1) AS keys;
  SELECT array_agg(r.ordinality), array_agg(coalesce(r.stored_id, _repeats.ids[r.first_ord])),
         coalesce(bool_and(coalesce(herald._valid(kind => c.kind, max_payload_bytes => c.max_payload_bytes, max_segments => c.max_segments, max_recipients => c.max_recipients,
           recipient => r.recipient, payload => r.payload, run_at => r.run_at, priority => r.priority,
           policy => _repeats.policy, channel_producers => c.producers, channel_prefixes => c.recipient_prefixes,
           max_attempts => r.max_attempts, metadata => r.metadata, idempotency_key => r.idempotency_key,
           ordering_key => r.ordering_key, expires_at => r.expires_at, recipient_zone => r.recipient_zone,
           now => _repeats.now), false)), true)
  INTO positions, first_ids, valid
  FROM (SELECT s.*, min(s.ordinality) OVER (PARTITION BY s.idempotency_key) AS first_ord,
               (SELECT m.id FROM herald.messages m
                WHERE m.producer = (_repeats.policy).producer AND m.idempotency_key = s.idempotency_key) AS stored_id
        FROM unnest(specs) WITH ORDINALITY AS s
        WHERE s.idempotency_key IS NOT NULL) AS r
  LEFT JOIN herald.channels c ON c.name = r.channel
  WHERE r.stored_id IS NOT NULL OR r.ordinality > r.first_ord;
END
$$;

REVOKE ALL ON FUNCTION herald._repeats(herald.message_spec[], herald.producers, bigint[], timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._repeats(herald.message_spec[], herald.producers, bigint[], timestamptz) IS
  'Private: lock the idempotency keys of an enqueue call and find its repeats (generic plan).';
