-- herald._validate(channel, recipient, payload, run_at, priority, max_attempts,
-- metadata, idempotency_key, ordering_key, now, prefix) — check one message before
-- it is stored; returns the max_attempts it gets (its own, or the channel's default).
-- The one set of rules
-- behind herald.enqueue and herald.enqueue_batch.
--
-- Raises, through herald._reject, with the field in COLUMN (`prefix` is '' for
-- enqueue and 'messages[<i>].' for enqueue_batch):
--   HR001 channel          unknown (or NULL) channel
--   HR002 recipient        empty, over 320 characters, or not valid for the channel kind:
--                          email = addr-spec (local@domain, dot-separated labels, no
--                          leading, trailing or double dots in the local part),
--                          sms = E.164 ('+', a non-zero digit, 6 to 14 more digits),
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
-- NULL run_at, priority and max_attempts are valid (defaults are applied by the caller).
-- Reads herald.channels by primary key. Locks: none.
CREATE OR REPLACE FUNCTION herald._validate(
  channel text,
  recipient text,
  payload jsonb,
  run_at timestamptz,
  priority integer,
  max_attempts integer,
  metadata jsonb,
  idempotency_key text,
  ordering_key text,
  now timestamptz,
  prefix text
) RETURNS integer
LANGUAGE plpgsql
STABLE
AS $$
#variable_conflict use_variable
DECLARE
  ch herald.channels;
BEGIN
  SELECT c.* INTO ch FROM herald.channels c WHERE c.name = channel;
  IF NOT FOUND THEN
    PERFORM herald._reject('HR001', prefix || 'channel', format('unknown channel %L', channel),
      hint => 'known channels are the rows of herald.channels');
  END IF;

  IF recipient IS NULL OR recipient = '' OR length(recipient) > 320 THEN
    PERFORM herald._reject('HR002', prefix || 'recipient', 'must be a non-empty string of at most 320 characters');
  ELSIF ch.kind = 'email' AND NOT herald._email_address(recipient) THEN
    PERFORM herald._reject('HR002', prefix || 'recipient', format('%L is not an e-mail address', recipient),
      hint => 'expected local-part@domain, e.g. ana@example.com');
  ELSIF ch.kind = 'sms' AND recipient !~ ('^(?:' || herald._recipient_pattern('sms') || ')$') THEN
    PERFORM herald._reject('HR002', prefix || 'recipient', format('%L is not an E.164 phone number', recipient),
      hint => 'expected + and country code and number, digits only, e.g. +14155550100');
  ELSIF ch.kind = 'webhook' AND recipient !~ ('^(?:' || herald._recipient_pattern('webhook') || ')$') THEN
    PERFORM herald._reject('HR002', prefix || 'recipient', format('%L is not an http(s) URL', recipient));
  END IF;

  IF payload IS NULL OR jsonb_typeof(payload) <> 'object' THEN
    PERFORM herald._reject('HR003', prefix || 'payload', 'must be a JSON object');
  ELSIF ch.kind = 'email' AND NOT herald._nonempty_string(payload, 'subject') THEN
    PERFORM herald._reject('HR003', prefix || 'payload', 'an e-mail needs "subject" (a non-empty string)');
  ELSIF ch.kind = 'email' AND NOT (herald._nonempty_string(payload, 'text')
                                OR herald._nonempty_string(payload, 'html')
                                OR herald._nonempty_string(payload, 'body')) THEN
    PERFORM herald._reject('HR003', prefix || 'payload', 'an e-mail needs "text", "html" or "body" (a non-empty string)');
  ELSIF ch.kind = 'sms' AND NOT (herald._nonempty_string(payload, 'text')
                              OR herald._nonempty_string(payload, 'body')) THEN
    PERFORM herald._reject('HR003', prefix || 'payload', 'an SMS needs "text" or "body" (a non-empty string)');
  ELSIF pg_column_size(payload) > ch.max_payload_bytes THEN
    PERFORM herald._reject('HR004', prefix || 'payload',
      format('is %s bytes, over the %s-byte limit of channel %L', pg_column_size(payload), ch.max_payload_bytes, ch.name));
  END IF;

  IF run_at NOT BETWEEN now - interval '1 year' AND now + interval '1 year' THEN
    PERFORM herald._reject('HR005', prefix || 'run_at', format('%s is more than a year away from now', run_at));
  END IF;
  IF priority NOT BETWEEN -100 AND 100 THEN
    PERFORM herald._reject('HR006', prefix || 'priority', format('%s is outside -100..100 (lower runs first)', priority));
  END IF;
  IF max_attempts NOT BETWEEN 1 AND 100 THEN
    PERFORM herald._reject('HR007', prefix || 'max_attempts', format('%s is outside 1..100', max_attempts));
  END IF;
  IF jsonb_typeof(metadata) <> 'object' THEN
    PERFORM herald._reject('HR008', prefix || 'metadata', 'must be a JSON object');
  ELSIF pg_column_size(metadata) > 8192 THEN
    PERFORM herald._reject('HR008', prefix || 'metadata', format('is %s bytes, over the 8192-byte limit', pg_column_size(metadata)));
  END IF;
  IF idempotency_key = '' OR length(idempotency_key) > 255 THEN
    PERFORM herald._reject('HR009', prefix || 'idempotency_key', 'must be 1 to 255 characters');
  END IF;
  IF ordering_key = '' OR length(ordering_key) > 255 THEN
    PERFORM herald._reject('HR010', prefix || 'ordering_key', 'must be 1 to 255 characters');
  END IF;
  RETURN coalesce(max_attempts, ch.max_attempts);
END
$$;

REVOKE ALL ON FUNCTION herald._validate(text, text, jsonb, timestamptz, integer, integer, jsonb, text, text, timestamptz, text) FROM PUBLIC;
