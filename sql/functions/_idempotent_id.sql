-- herald._idempotent_id(key) — the id of the message stored under an idempotency key,
-- for an enqueue whose INSERT hit the key (ON CONFLICT DO NOTHING). Raises 40001
-- serialization_failure when that message is invisible to this snapshot (it was
-- committed after a REPEATABLE READ / SERIALIZABLE transaction began): retry.
-- Index: messages_idempotency_key_idx. Locks: none.
CREATE OR REPLACE FUNCTION herald._idempotent_id(key text)
RETURNS bigint
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
  v_id bigint;
BEGIN
  SELECT m.id INTO v_id FROM herald.messages m WHERE m.idempotency_key = key;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING
      ERRCODE = 'serialization_failure',
      MESSAGE = format('idempotency_key %L was stored by a concurrent transaction this snapshot cannot see', key),
      HINT = 'retry the transaction';
  END IF;
  RETURN v_id;
END
$$;

REVOKE ALL ON FUNCTION herald._idempotent_id(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._idempotent_id(text) IS
  'Private: the id of the message stored under an idempotency key.';
