-- herald._valid(kind, max_payload_bytes, max_segments, max_recipients, recipient, …, now,
-- checked_kind) — true when one message passes every enqueue rule for a channel of that
-- kind, payload limit, SMS segment limit and e-mail recipient limit
-- (kind NULL: unknown channel, false) open to channel_producers (NULL: all), sending
-- to channel_prefixes (NULL: anywhere), from a producer with the policy of its
-- herald.producers row. The set-based twin of herald._validate, which
-- states the rules and names the field: herald._enqueue stores only rows for which
-- this is true, and calls _validate when one is not. It must never be false where
-- _validate passes (tests/enqueue_test.go compares them).
-- checked_kind: the kind whose recipient syntax the caller matched for every message
-- of the call at once (herald._recipient_list_kind); such rows skip their own match.
-- One SQL expression with scalar arguments, so the planner inlines it into the INSERT.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._valid(
  kind text,
  max_payload_bytes integer,
  max_segments integer,
  max_recipients integer,
  recipient text,
  payload jsonb,
  run_at timestamptz,
  priority integer,
  policy herald.producers,
  channel_producers text[],
  channel_prefixes text[],
  max_attempts integer,
  metadata jsonb,
  idempotency_key text,
  ordering_key text,
  expires_at timestamptz,
  recipient_zone text,
  now timestamptz,
  checked_kind text DEFAULT NULL
) RETURNS boolean
LANGUAGE sql
STABLE
AS $$
  SELECT coalesce(
        kind IS NOT NULL
    AND (channel_producers IS NULL OR (policy).producer = ANY (channel_producers))
    AND (channel_prefixes IS NULL OR recipient ^@ ANY (channel_prefixes))
    AND CASE kind
          WHEN 'email' THEN herald._email_address(recipient => recipient, syntax_checked => coalesce(checked_kind = 'email', false))
                            AND payload @? 'strict $ ? ((@.subject > "" && (@.text > "" || @.html > "" || @.body > "")) || @.template_id > "")'
                            AND CASE WHEN payload - '{subject,text,html,body}'::text[] = '{}' -- the usual payload
                                     THEN payload ->> 'subject' !~ '[\r\n]'
                                          AND NOT payload @? 'strict $.* ? (@.type() != "string" && @.type() != "null")'
                                     ELSE payload - herald._payload_fields(kind => 'email') = '{}'
                                          AND herald._payload_problem(kind => 'email', payload => payload) IS NULL
                                          AND herald._email_addresses(payload => payload) <= max_recipients
                                          AND (NOT payload ? 'from'
                                               OR herald._sender_allowed(sender => payload ->> 'from', senders => (policy).senders))
                                END
          WHEN 'sms' THEN (coalesce(checked_kind = 'sms', false)
                           OR recipient ~ ('^(?:' || herald._recipient_pattern(kind => 'sms') || ')$'))
                          AND payload @? 'strict $ ? (@.text > "" || @.body > "" || exists(@.media_urls) || exists(@.content_sid))'
                          AND coalesce(length(payload ->> 'text'), 0) <= 1600 AND coalesce(length(payload ->> 'body'), 0) <= 1600
                          AND (max_segments IS NULL OR payload ?| '{media_urls,content_sid}'::text[]
                               OR herald._sms_within(body => coalesce(nullif(payload ->> 'text', ''), payload ->> 'body'), max_segments => max_segments))
                          AND NOT payload @? 'strict $ ? ((@.text.type() != "string" && @.text.type() != "null") || (@.body.type() != "string" && @.body.type() != "null"))'
                          AND payload - herald._payload_fields(kind => 'sms') = '{}'
                          AND (NOT payload ?| '{media_urls,content_sid,content_variables}'::text[]
                               OR herald._payload_problem(kind => 'sms', payload => payload) IS NULL)
          ELSE CASE kind WHEN 'webhook' THEN octet_length(recipient) ELSE length(recipient) END
                 <@ int4range(1, CASE kind WHEN 'webhook' THEN 2048 ELSE 320 END, '[]')
               AND jsonb_typeof(payload) = 'object'
               AND herald._shallow(value => payload)
               AND (kind <> 'webhook' OR ((coalesce(checked_kind = 'webhook', false)
                    OR recipient ~ ('^(?:' || herald._recipient_pattern(kind => 'webhook') || ')$'))
                    AND herald._refused_address(url => recipient) IS NULL))
        END
    AND pg_column_size(payload) <= max_payload_bytes
    AND (run_at IS NULL OR run_at BETWEEN now - interval '1 year' AND now + interval '1 year')
    AND (priority IS NULL OR priority <@ int4range((policy).min_priority, 100, '[]'))
    AND (max_attempts IS NULL OR max_attempts <@ int4range(1, 100, '[]'))
    AND (metadata IS NULL OR (jsonb_typeof(metadata) = 'object' AND pg_column_size(metadata) <= 8192 AND herald._shallow(value => metadata)))
    AND (idempotency_key IS NULL OR length(idempotency_key) <@ int4range(1, 255, '[]'))
    AND (ordering_key IS NULL OR length(ordering_key) <@ int4range(1, 255, '[]'))
    AND (expires_at IS NULL OR expires_at > greatest(run_at, now))
    AND (recipient_zone IS NULL OR herald._time_zone(name => recipient_zone)),
    false)
$$;

REVOKE ALL ON FUNCTION herald._valid(text, integer, integer, integer, text, jsonb, timestamptz, integer, herald.producers, text[], text[], integer, jsonb, text, text, timestamptz, text, timestamptz, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._valid(text, integer, integer, integer, text, jsonb, timestamptz, integer, herald.producers, text[], text[], integer, jsonb, text, text, timestamptz, text, timestamptz, text) IS
  'Private: true when a message passes every enqueue rule (inlined set-based check).';
