-- herald.cancel(id, idempotency_key, now) — withdraw a message that is not being sent:
-- one 'queued' or 'held' (scheduled, waiting its turn, or waiting to retry) becomes
-- 'cancelled', with a 'cancelled' log event, and is never sent. Give exactly one of
-- `id` or the `idempotency_key` it was enqueued with. Returns the message's status
-- after the call: 'cancelled' (now or before), or the state that cannot be cancelled
-- ('processing': a send is under way; 'sent', 'dead', 'expired', 'suppressed'); NULL
-- when there is no such message of the caller's. A producer acts on its own messages
-- only, herald_admin on any by id (herald._own_message). Racing a claim, one of them
-- wins: cancelled and never claimed, or claimed and 'processing'. Errors: those of
-- herald._own_message (22V12, 22V09). Index: the primary key, messages_idempotency_key_idx.
-- Locks: the row (waits for a claim holding it); ROW EXCLUSIVE on log_statements.
CREATE OR REPLACE FUNCTION herald.cancel(
  id bigint DEFAULT NULL,
  idempotency_key text DEFAULT NULL,
  now timestamptz DEFAULT now()
)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  clock_ok boolean := herald._check_clock(now => cancel.now); -- first: a forged clock changes nothing
  v_id bigint := herald._own_message(id => cancel.id, idempotency_key => cancel.idempotency_key);
  v_status text;
  v_ordered boolean;
BEGIN
  WITH cancelled AS (
    UPDATE herald.messages m
    SET status = 'cancelled', finished_at = cancel.now
    WHERE m.id = v_id AND m.status IN ('queued', 'held')
    RETURNING m.id, m.channel, m.recipient, m.ordering_key
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
    SELECT 'cancelled', cancel.now, ARRAY[c.id], ARRAY[c.channel], ARRAY[herald._key_hash(c.ordering_key, c.recipient)]
    FROM cancelled c
  )
  SELECT 'cancelled', c.ordering_key IS NOT NULL INTO v_status, v_ordered FROM cancelled c;
  IF v_status IS NULL THEN
    RETURN (SELECT m.status FROM herald.messages m WHERE m.id = v_id); -- not cancelled now: what it is instead
  END IF;
  IF v_ordered THEN
    PERFORM herald._release_after(ids => ARRAY[v_id]);
  END IF;
  PERFORM herald._notify(ARRAY['herald_log']);
  RETURN v_status;
END
$$;

REVOKE ALL ON FUNCTION herald.cancel(bigint, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.cancel(bigint, text, timestamptz) TO herald_producer, herald_admin;
COMMENT ON FUNCTION herald.cancel(bigint, text, timestamptz) IS
  'Withdraw one of the caller''s messages that is queued or held (by id or idempotency key); returns its status after.';
