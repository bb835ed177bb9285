-- herald._own_message(id, idempotency_key) — the id of the caller's message named by
-- exactly one of `id` or the `idempotency_key` it was enqueued with, or NULL when the
-- caller has no such message. By id: a message of herald._producer(), or any message
-- for a member of herald_admin that names no producer; by key: always one of
-- herald._producer()'s own (keys are per producer). For herald.status and herald.cancel. Errors: 22V12 id (neither
-- given) or idempotency_key (both given); 22V09 idempotency_key (empty, over 255
-- characters). Index: the primary key, messages_idempotency_key_idx. Locks: none.
CREATE OR REPLACE FUNCTION herald._own_message(id bigint, idempotency_key text)
RETURNS bigint
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
  IF (_own_message.id IS NULL) = (_own_message.idempotency_key IS NULL) THEN
    PERFORM herald._reject(code => '22V12', field => CASE WHEN _own_message.id IS NULL THEN 'id' ELSE 'idempotency_key' END,
                           message => 'give either id or idempotency_key');
  END IF;
  IF _own_message.id IS NOT NULL THEN
    IF coalesce(current_setting('herald.producer', true), '') = ''
       AND pg_has_role(herald._caller(), 'herald_admin', 'MEMBER') THEN
      RETURN (SELECT m.id FROM herald.messages m WHERE m.id = _own_message.id);
    END IF;
    RETURN (SELECT m.id FROM herald.messages m WHERE m.id = _own_message.id AND m.producer = herald._producer());
  END IF;
  IF length(_own_message.idempotency_key) NOT BETWEEN 1 AND 255 THEN
    PERFORM herald._reject(code => '22V09', field => 'idempotency_key', message => 'must be 1 to 255 characters');
  END IF;
  RETURN (SELECT m.id FROM herald.messages m
          WHERE m.producer = herald._producer() AND m.idempotency_key = _own_message.idempotency_key);
END
$$;

REVOKE ALL ON FUNCTION herald._own_message(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._own_message(bigint, text) IS
  'Private: the caller''s message by id or idempotency key (NULL: none of its own).';
