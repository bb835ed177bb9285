-- herald._enqueue(…arrays…, batch, now) — validate and store messages; the one
-- implementation behind herald.enqueue and herald.enqueue_batch.
--
-- Inputs are parallel arrays, one element per message. Every message is validated
-- before anything is written, so an error stores nothing (all or nothing). Errors go
-- through herald._reject with the field in COLUMN: 'recipient' for a single enqueue,
-- 'messages[3].recipient' when `batch` is true (index from 0).
--
-- Validation, per message (SQLSTATE, field):
--   HR001 channel          unknown channel (not in herald.channels)
--   HR002 recipient        empty, over 320 characters, or not valid for the channel kind:
--                          email = addr-spec (local@domain, dot-separated labels),
--                          sms = E.164 ('+' then 7 to 15 digits, no leading 0),
--                          webhook = http:// or https:// URL
--   HR003 payload          not a JSON object, or missing what the channel kind needs:
--                          email: "subject" and one of "text"/"html"/"body" (non-empty
--                          strings); sms: "text" or "body" (non-empty string)
--   HR004 payload          larger than the channel's max_payload_bytes (stored size)
--   HR005 run_at           more than 1 year before or after now
--   HR006 priority         outside -100..100
--   HR007 max_attempts     outside 1..100
--   HR008 metadata         not a JSON object, or over 8192 bytes
--   HR009 idempotency_key  empty or over 255 characters
--   HR010 ordering_key     empty or over 255 characters
--
-- Idempotency: a message whose idempotency_key already exists is not stored; its
-- element of the result is the id of the first message with that key (also when the
-- first one is earlier in the same batch). Concurrent callers with the same key: the
-- unique index messages_idempotency_key_idx makes all but one wait and insert
-- nothing; all get the winner's id. Under REPEATABLE READ or SERIALIZABLE the winner
-- may be invisible: then 40001 serialization_failure is raised (retry the transaction).
--
-- Ids are taken from the identity sequence before the insert so that the result is
-- in input order; ids are unique and increasing per call, not gapless.
-- One INSERT statement per call: statement-level triggers fire once per batch.
-- Locks: ROW EXCLUSIVE on herald.messages; key-level waits on a concurrent insert of
-- the same idempotency key. Reads herald.channels.
CREATE OR REPLACE FUNCTION herald._enqueue(
  channels text[],
  recipients text[],
  payloads jsonb[],
  run_ats timestamptz[],
  priorities integer[],
  idempotency_keys text[],
  ordering_keys text[],
  max_attempts integer[],
  metadatas jsonb[],
  batch boolean,
  now timestamptz
) RETURNS bigint[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  n integer := coalesce(cardinality(channels), 0);
  ch herald.channels;
  p text;               -- field prefix: '' or 'messages[i].'
  v_payload jsonb;
  v_run_at timestamptz[] := run_ats;
  v_prio integer[] := priorities;
  v_max integer[] := max_attempts;
  v_ids bigint[];
  v_inserted integer;
  v_has_keys boolean := false;
  i integer;
BEGIN
  FOR i IN 1 .. n LOOP
    p := CASE WHEN batch THEN format('messages[%s].', i - 1) ELSE '' END;

    IF channels[i] IS NULL OR ch.name IS DISTINCT FROM channels[i] THEN
      SELECT c.* INTO ch FROM herald.channels c WHERE c.name = channels[i];
      IF NOT FOUND THEN
        PERFORM herald._reject('HR001', p || 'channel',
          format('unknown channel %L', channels[i]),
          hint => 'known channels are the rows of herald.channels');
      END IF;
    END IF;

    IF recipients[i] IS NULL OR recipients[i] = '' OR length(recipients[i]) > 320 THEN
      PERFORM herald._reject('HR002', p || 'recipient', 'must be a non-empty string of at most 320 characters');
    ELSIF ch.kind = 'email' AND NOT (
          length(recipients[i]) <= 254
      AND recipients[i] ~ '^[A-Za-z0-9.!#$%&''*+/=?^_`{|}~-]+@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$'
      AND recipients[i] !~ '^\.|\.\.|\.@') THEN
      PERFORM herald._reject('HR002', p || 'recipient', format('%L is not an e-mail address', recipients[i]),
        hint => 'expected local-part@domain, e.g. ana@example.com');
    ELSIF ch.kind = 'sms' AND recipients[i] !~ '^\+[1-9][0-9]{6,14}$' THEN
      PERFORM herald._reject('HR002', p || 'recipient', format('%L is not an E.164 phone number', recipients[i]),
        hint => 'expected + and country code and number, digits only, e.g. +14155550100');
    ELSIF ch.kind = 'webhook' AND recipients[i] !~ '^https?://[^\s/?#]+([/?#]\S*)?$' THEN
      PERFORM herald._reject('HR002', p || 'recipient', format('%L is not an http(s) URL', recipients[i]));
    END IF;

    v_payload := payloads[i];
    IF v_payload IS NULL OR jsonb_typeof(v_payload) <> 'object' THEN
      PERFORM herald._reject('HR003', p || 'payload', 'must be a JSON object');
    ELSIF ch.kind = 'email' AND NOT herald._nonempty_string(v_payload -> 'subject') THEN
      PERFORM herald._reject('HR003', p || 'payload', 'an e-mail needs "subject" (a non-empty string)');
    ELSIF ch.kind = 'email' AND NOT (herald._nonempty_string(v_payload -> 'text')
                                  OR herald._nonempty_string(v_payload -> 'html')
                                  OR herald._nonempty_string(v_payload -> 'body')) THEN
      PERFORM herald._reject('HR003', p || 'payload', 'an e-mail needs "text", "html" or "body" (a non-empty string)');
    ELSIF ch.kind = 'sms' AND NOT (herald._nonempty_string(v_payload -> 'text')
                                OR herald._nonempty_string(v_payload -> 'body')) THEN
      PERFORM herald._reject('HR003', p || 'payload', 'an SMS needs "text" or "body" (a non-empty string)');
    ELSIF pg_column_size(v_payload) > ch.max_payload_bytes THEN
      PERFORM herald._reject('HR004', p || 'payload',
        format('is %s bytes, over the %s-byte limit of channel %L', pg_column_size(v_payload), ch.max_payload_bytes, ch.name));
    END IF;

    IF v_run_at[i] IS NULL THEN
      v_run_at[i] := now;
    ELSIF v_run_at[i] NOT BETWEEN now - interval '1 year' AND now + interval '1 year' THEN
      PERFORM herald._reject('HR005', p || 'run_at', format('%s is more than a year away from now', v_run_at[i]));
    END IF;

    IF v_prio[i] IS NULL THEN
      v_prio[i] := 0;
    ELSIF v_prio[i] NOT BETWEEN -100 AND 100 THEN
      PERFORM herald._reject('HR006', p || 'priority', format('%s is outside -100..100 (lower runs first)', v_prio[i]));
    END IF;

    IF v_max[i] IS NULL THEN
      v_max[i] := ch.max_attempts;
    ELSIF v_max[i] NOT BETWEEN 1 AND 100 THEN
      PERFORM herald._reject('HR007', p || 'max_attempts', format('%s is outside 1..100', v_max[i]));
    END IF;

    IF metadatas[i] IS NOT NULL AND jsonb_typeof(metadatas[i]) <> 'object' THEN
      PERFORM herald._reject('HR008', p || 'metadata', 'must be a JSON object');
    ELSIF pg_column_size(metadatas[i]) > 8192 THEN
      PERFORM herald._reject('HR008', p || 'metadata', format('is %s bytes, over the 8192-byte limit', pg_column_size(metadatas[i])));
    END IF;

    IF idempotency_keys[i] IS NOT NULL THEN
      v_has_keys := true;
      IF idempotency_keys[i] = '' OR length(idempotency_keys[i]) > 255 THEN
        PERFORM herald._reject('HR009', p || 'idempotency_key', 'must be 1 to 255 characters');
      END IF;
    END IF;

    IF ordering_keys[i] IS NOT NULL AND (ordering_keys[i] = '' OR length(ordering_keys[i]) > 255) THEN
      PERFORM herald._reject('HR010', p || 'ordering_key', 'must be 1 to 255 characters');
    END IF;
  END LOOP;

  IF n = 0 THEN
    RETURN '{}';
  END IF;

  SELECT array_agg(nextval('herald.messages_id_seq')) INTO v_ids FROM generate_series(1, n);

  INSERT INTO herald.messages AS m
    (id, channel, recipient, payload, metadata, priority, run_at, ordering_key,
     idempotency_key, max_attempts, created_at)
  SELECT u.id, u.channel, u.recipient, u.payload, u.metadata, u.priority, u.run_at,
         u.ordering_key, u.idempotency_key, u.max_attempts, now
  FROM unnest(v_ids, channels, recipients, payloads, metadatas, v_prio, v_run_at,
              ordering_keys, idempotency_keys, v_max)
       AS u(id, channel, recipient, payload, metadata, priority, run_at,
            ordering_key, idempotency_key, max_attempts)
  ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING;
  GET DIAGNOSTICS v_inserted = ROW_COUNT;

  IF v_inserted < n THEN
    -- Some keys existed (or repeated within this call): answer with the first ids.
    FOR i IN 1 .. n LOOP
      CONTINUE WHEN idempotency_keys[i] IS NULL;
      v_ids[i] := (SELECT m.id FROM herald.messages m WHERE m.idempotency_key = idempotency_keys[i]);
      IF v_ids[i] IS NULL THEN
        RAISE EXCEPTION USING
          ERRCODE = 'serialization_failure',
          MESSAGE = format('idempotency_key %L was inserted by a concurrent transaction not visible to this snapshot', idempotency_keys[i]),
          HINT = 'retry the transaction';
      END IF;
    END LOOP;
  END IF;

  RETURN v_ids;
END
$$;

REVOKE ALL ON FUNCTION herald._enqueue(text[], text[], jsonb[], timestamptz[], integer[], text[], text[], integer[], jsonb[], boolean, timestamptz) FROM PUBLIC;
