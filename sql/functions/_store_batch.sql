-- herald._store_batch(channels, recipients, payloads, run_ats, priorities,
-- idempotency_keys, ordering_keys, max_attempts, metadata, now, checked_kind) —
-- check a call's messages (parallel arrays of equal length, the optional ones NULL
-- or holding NULLs) with herald._valid and store them all; returns their ids in
-- input order, or '{}' when some message fails, and the caller must then raise
-- (naming the bad element), which undoes whatever this call stored.
-- The body of herald.enqueue_many (release 9), shared with enqueue_batch's fast
-- path: both ask herald._recipient_list_kind once and pass its answer as
-- checked_kind (see herald._store_valid), and each names a bad message its own way
-- (enqueue_many with herald._validate, enqueue_batch with its element-by-element
-- path, which also reports a field of the wrong JSON type).
-- Without idempotency keys, one statement checks and stores (herald._store_valid);
-- with keys, every message is checked at once by herald._valid, then herald._store
-- inserts them (ON CONFLICT, first ids for repeats).
-- Locks: ROW EXCLUSIVE on herald.messages and herald.log_statements.
CREATE OR REPLACE FUNCTION herald._store_batch(
  channels text[],
  recipients text[],
  payloads jsonb[],
  run_ats timestamptz[],
  priorities integer[],
  idempotency_keys text[],
  ordering_keys text[],
  max_attempts integer[],
  metadata jsonb[],
  now timestamptz,
  checked_kind text
) RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
  -- (array_remove rather than a sub-select: a plain expression, which PL/pgSQL
  -- evaluates without starting an executor)
  IF idempotency_keys IS NULL OR array_remove(idempotency_keys, NULL) = '{}' THEN
    RETURN herald._store_valid(channels, recipients, payloads, metadata, priorities, run_ats,
                               ordering_keys, max_attempts, _store_batch.now, _store_batch.checked_kind);
  END IF;
  IF EXISTS (SELECT FROM (SELECT unnest(channels) AS channel, unnest(recipients) AS recipient,
                                 unnest(payloads) AS payload, unnest(run_ats) AS run_at,
                                 unnest(priorities) AS priority, unnest(idempotency_keys) AS idempotency_key,
                                 unnest(ordering_keys) AS ordering_key, unnest(max_attempts) AS max_attempts,
                                 unnest(metadata) AS metadata) AS u
             LEFT JOIN herald.channels c ON c.name = u.channel
             WHERE NOT herald._valid(c.kind, c.max_payload_bytes, u.recipient, u.payload, u.run_at,
                                     u.priority, u.max_attempts, u.metadata, u.idempotency_key,
                                     u.ordering_key, _store_batch.now, _store_batch.checked_kind)) THEN
    RETURN '{}';
  END IF;
  RETURN herald._store(channels, recipients, payloads, metadata, priorities, run_ats,
                       ordering_keys, idempotency_keys, max_attempts, _store_batch.now);
END
$$;

REVOKE ALL ON FUNCTION herald._store_batch(text[], text[], jsonb[], timestamptz[], integer[], text[], text[], integer[], jsonb[], timestamptz, text) FROM PUBLIC;
