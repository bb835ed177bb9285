-- herald._validate(spec, policy, now, field_prefix) — raise the error naming the first
-- field of one message (from the producer whose herald.producers row is policy) that
-- breaks an enqueue rule; nothing when it passes. The rules, stated once (herald._valid
-- is their set-based twin), via herald._reject, COLUMN = field_prefix || field:
--   22V01 channel unknown  42501 channel not open to the producer  22V02 recipient
--         syntax of the kind, 1..320 chars (a URL 2048 bytes)  42501 outside recipient_prefixes
--   22V03 payload  what the kind needs (email: subject and text, html, body or template_id,
--         max_recipients; sms: text, body, media_urls or content_sid, 1600 characters, max_segments);
--         payload.<field> unknown to the kind or breaking its rules (_payload_problem)
--   22V04 payload  over the channel's max_payload_bytes   22V05 run_at  within a year
--   22V06 priority -100..100   42501 priority below min_priority, payload.from not in senders
--   22V07 max_attempts 1..100   22V08 metadata object, 8 kB, 32 levels   22V09 idempotency_key /
--   22V10 ordering_key  1..255 characters   22V17 expires_at  after run_at (and now)
--   22V19 recipient_zone  a time zone name (herald._time_zone). Optional fields may be
-- NULL (defaults). Reads herald.channels by primary key. Locks: none.
CREATE OR REPLACE FUNCTION herald._validate(spec herald.message_spec, policy herald.producers, now timestamptz, field_prefix text)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
#variable_conflict use_variable
DECLARE
  ch herald.channels;
  p text := field_prefix;
  v_field text;
BEGIN
  SELECT c.* INTO ch FROM herald.channels c WHERE c.name = spec.channel;
  IF NOT FOUND THEN
    PERFORM herald._reject(code => '22V01', field => p || 'channel', message => format('unknown channel %L', spec.channel),
      hint => 'known channels are the rows of herald.channels');
  ELSIF NOT (policy).producer = ANY (ch.producers) THEN
    PERFORM herald._reject(code => '42501', field => p || 'channel',
      message => format('channel %L is not open to producer %L', spec.channel, (policy).producer),
      hint => 'an admin adds the producer to herald.channels.producers');
  END IF;

  IF spec.recipient IS NULL OR spec.recipient = '' OR length(spec.recipient) > 320 AND ch.kind IS DISTINCT FROM 'webhook' THEN
    PERFORM herald._reject(code => '22V02', field => p || 'recipient', message => 'must be a non-empty string of at most 320 characters');
  ELSIF ch.kind = 'webhook' AND octet_length(spec.recipient) > 2048 THEN
    PERFORM herald._reject(code => '22V02', field => p || 'recipient', message => 'must be a URL of at most 2048 bytes');
  ELSIF ch.kind = 'email' AND NOT herald._email_address(recipient => spec.recipient) THEN
    PERFORM herald._reject(code => '22V02', field => p || 'recipient', message => problem[1], hint => problem[2])
    FROM (SELECT herald._address_problem(address => spec.recipient)) AS x (problem);
  ELSIF ch.kind = 'sms' AND spec.recipient !~ ('^(?:' || herald._recipient_pattern(kind => 'sms') || ')$') THEN
    PERFORM herald._reject(code => '22V02', field => p || 'recipient', message => format('%L is not an E.164 phone number', spec.recipient),
      hint => 'expected + and country code and number, digits only, e.g. +14155550100');
  ELSIF ch.kind = 'webhook' AND spec.recipient !~ ('^(?:' || herald._recipient_pattern(kind => 'webhook') || ')$') THEN
    PERFORM herald._reject(code => '22V02', field => p || 'recipient', message => format('%L is not an http(s) URL', spec.recipient),
      hint => 'http(s)://host[:port][/path], a port from 1 to 65535');
  ELSIF ch.kind = 'webhook' AND herald._refused_address(url => spec.recipient) IS NOT NULL THEN
    PERFORM herald._reject(code => '22V02', field => p || 'recipient',
      message => 'the URL ' || herald._refused_address(url => spec.recipient),
      hint => 'webhooks may not target internal networks; see docs/security.md');
  ELSIF NOT spec.recipient ^@ ANY (ch.recipient_prefixes) THEN
    PERFORM herald._reject(code => '42501', field => p || 'recipient',
      message => format('%L is not where channel %L may send (%s)', spec.recipient, ch.name,
                        array_to_string(ch.recipient_prefixes, ', ')),
      hint => 'an admin lists the prefix in herald.channels.recipient_prefixes');
  END IF;

  IF jsonb_typeof(spec.payload) = 'object' THEN -- the first field the kind does not take
    v_field := (SELECT min(k) FROM jsonb_object_keys(spec.payload) AS k WHERE k <> ALL (herald._payload_fields(kind => ch.kind)));
  END IF;
  IF spec.payload IS NULL OR jsonb_typeof(spec.payload) <> 'object' THEN
    PERFORM herald._reject(code => '22V03', field => p || 'payload', message => 'must be a JSON object');
  ELSIF ch.kind = 'email' AND NOT spec.payload ? 'template_id'
        AND NOT herald._nonempty_string(obj => spec.payload, key => 'subject') THEN
    PERFORM herald._reject(code => '22V03', field => p || 'payload', message => 'an e-mail needs "subject" (a non-empty string) or "template_id"');
  ELSIF ch.kind = 'email' AND NOT spec.payload ? 'template_id'
        AND NOT (herald._nonempty_string(obj => spec.payload, key => 'text')
                 OR herald._nonempty_string(obj => spec.payload, key => 'html')
                 OR herald._nonempty_string(obj => spec.payload, key => 'body')) THEN
    PERFORM herald._reject(code => '22V03', field => p || 'payload', message => 'an e-mail needs "text", "html" or "body" (a non-empty string) or "template_id"');
  ELSIF ch.kind = 'sms' AND NOT (herald._nonempty_string(obj => spec.payload, key => 'text')
                              OR herald._nonempty_string(obj => spec.payload, key => 'body')
                              OR spec.payload ?| '{media_urls,content_sid}'::text[]) THEN
    PERFORM herald._reject(code => '22V03', field => p || 'payload', message => 'an SMS needs "text" or "body" (a non-empty string), "media_urls" or "content_sid"');
  ELSIF ch.kind = 'sms' AND (length(spec.payload ->> 'text') > 1600 OR length(spec.payload ->> 'body') > 1600) THEN
    PERFORM herald._reject(code => '22V03', field => p || 'payload.' || CASE WHEN length(spec.payload ->> 'text') > 1600 THEN 'text' ELSE 'body' END,
      message => 'must be at most 1600 characters (the most one SMS may carry: Twilio refuses longer, error 21617)');
  ELSIF ch.kind = 'sms' AND ch.max_segments IS NOT NULL AND NOT spec.payload ?| '{media_urls,content_sid}'::text[]
        AND NOT herald._sms_within(body => coalesce(nullif(spec.payload ->> 'text', ''), spec.payload ->> 'body'), max_segments => ch.max_segments) THEN
    PERFORM herald._reject(code => '22V03', field => p || 'payload.' || CASE WHEN nullif(spec.payload ->> 'text', '') IS NULL THEN 'body' ELSE 'text' END,
      message => format('takes %s SMS segments, over the %s of channel %L (%s)', herald._sms_segments(body => t.body), ch.max_segments, ch.name,
                        CASE WHEN t.other IS NULL THEN 'GSM-7: 153 characters a segment'
                             ELSE format('UCS-2 for %L, not a GSM-7 character: 67 characters a segment', t.other) END),
      hint => 'each segment is billed: shorten the text or send a link')
    FROM (SELECT x.body, substring(x.body FROM '[^' || substr(herald._gsm7(), 2)) AS other
          FROM (SELECT coalesce(nullif(spec.payload ->> 'text', ''), spec.payload ->> 'body') AS body) AS x) AS t;
  ELSIF v_field IS NOT NULL THEN
    PERFORM herald._reject(code => '22V03', field => p || 'payload.' || v_field,
      message => format('is not a field of %s payloads; nothing would send it', ch.kind),
      hint => 'fields: ' || array_to_string(herald._payload_fields(kind => ch.kind), ', '));
  ELSIF herald._payload_problem(kind => ch.kind, payload => spec.payload) IS NOT NULL THEN
    PERFORM herald._reject(code => '22V03', field => p || problem[1], message => problem[2])
    FROM (SELECT herald._payload_problem(kind => ch.kind, payload => spec.payload) AS problem) AS x;
  ELSIF ch.kind = 'email' AND herald._email_addresses(payload => spec.payload) > ch.max_recipients THEN
    PERFORM herald._reject(code => '22V03', field => p || CASE WHEN spec.payload ? 'bcc' THEN 'payload.bcc' ELSE 'payload.cc' END,
      message => format('the message goes to %s addresses (recipient, cc and bcc), over the %s of channel %L (its max_recipients)',
                        herald._email_addresses(payload => spec.payload), ch.max_recipients, ch.name),
      hint => 'send it as several messages; an admin raises herald.channels.max_recipients if the provider takes more');
  ELSIF ch.kind = 'email' AND spec.payload ? 'from'
        AND NOT herald._sender_allowed(sender => spec.payload ->> 'from', senders => (policy).senders) THEN
    PERFORM herald._reject(code => '42501', field => p || 'payload.from',
      message => format('%s is not a sender this producer may use', herald._mailbox(value => spec.payload ->> 'from')),
      hint => 'an admin lists the address or its domain in herald.producers.senders; without from, the runner''s From is used');
  ELSIF pg_column_size(spec.payload) > ch.max_payload_bytes THEN
    PERFORM herald._reject(code => '22V04', field => p || 'payload',
      message => format('is %s bytes, over the %s-byte limit of channel %L', pg_column_size(spec.payload), ch.max_payload_bytes, ch.name));
  END IF;

  IF spec.run_at NOT BETWEEN now - interval '1 year' AND now + interval '1 year' THEN
    PERFORM herald._reject(code => '22V05', field => p || 'run_at', message => format('%s is more than a year away from now', spec.run_at));
  END IF;
  IF spec.priority NOT BETWEEN -100 AND 100 THEN
    PERFORM herald._reject(code => '22V06', field => p || 'priority', message => format('%s is outside -100..100 (lower runs first)', spec.priority));
  ELSIF spec.priority < (policy).min_priority THEN
    PERFORM herald._reject(code => '42501', field => p || 'priority',
      message => format('%s is more urgent than this producer may use (%s..100, lower runs first)', spec.priority, (policy).min_priority),
      hint => 'an admin grants a lower min_priority in herald.producers');
  END IF;
  IF spec.max_attempts NOT BETWEEN 1 AND 100 THEN
    PERFORM herald._reject(code => '22V07', field => p || 'max_attempts', message => format('%s is outside 1..100', spec.max_attempts));
  END IF;
  IF jsonb_typeof(spec.metadata) <> 'object' THEN
    PERFORM herald._reject(code => '22V08', field => p || 'metadata', message => 'must be a JSON object');
  ELSIF pg_column_size(spec.metadata) > 8192 THEN
    PERFORM herald._reject(code => '22V08', field => p || 'metadata', message => format('is %s bytes, over the 8192-byte limit', pg_column_size(spec.metadata)));
  ELSIF NOT herald._shallow(value => spec.metadata) THEN
    PERFORM herald._reject(code => '22V08', field => p || 'metadata', message => 'is nested more than 32 levels deep, more than JSON readers take');
  END IF;
  IF spec.idempotency_key = '' OR length(spec.idempotency_key) > 255 THEN
    PERFORM herald._reject(code => '22V09', field => p || 'idempotency_key', message => 'must be 1 to 255 characters');
  END IF;
  IF spec.ordering_key = '' OR length(spec.ordering_key) > 255 THEN
    PERFORM herald._reject(code => '22V10', field => p || 'ordering_key', message => 'must be 1 to 255 characters');
  END IF;
  IF spec.expires_at <= greatest(spec.run_at, now) THEN
    PERFORM herald._reject(code => '22V17', field => p || 'expires_at',
      message => format('%s is not after the time the message is due (%s)', spec.expires_at, greatest(spec.run_at, now)));
  END IF;
  IF spec.recipient_zone IS NOT NULL AND NOT herald._time_zone(name => spec.recipient_zone) THEN
    PERFORM herald._reject(code => '22V19', field => p || 'recipient_zone',
      message => format('%L is not the name of a time zone', spec.recipient_zone),
      hint => 'an IANA name such as America/New_York or Europe/Berlin (the names of pg_timezone_names), or UTC');
  END IF;
END
$$;

REVOKE ALL ON FUNCTION herald._validate(herald.message_spec, herald.producers, timestamptz, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._validate(herald.message_spec, herald.producers, timestamptz, text) IS
  'Private: raise the error naming the first bad field of a message (the enqueue rules).';
