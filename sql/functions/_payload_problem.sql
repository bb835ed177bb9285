-- herald._payload_problem(kind, payload) — the first problem of a payload's optional
-- fields, as {field, message} (field 'payload.<name>[…]'), or NULL when there is none.
-- email: from, reply_to mailboxes (herald._mailbox) of 1..320; cc, bcc 1..50 addresses;
--   headers at most 50 one-line strings within 998 bytes a line, names printable ASCII
--   and none herald, a provider or a mail server sets (docs/sql.md "Payload fields");
--   attachments 1..10 {filename (no executable type Gmail blocks), content (base64),
--   content_type, disposition, content_id}; template_id d-<32 hex>, dynamic_template_data
--   an object beside it; categories 1..10 strings of 1..255; custom_args strings under
--   10,000 bytes, not herald_id; subject, text, html, body strings, subject one line.
-- sms: text, body strings; media_urls 1..10 http(s) URLs of at most 2,048 characters;
--   content_sid a Twilio Content template (HX + 32 hex) alone, with content_variables
--   an object of 1..100 strings. Any kind: nested at most 32 levels (herald._shallow).
-- herald._valid calls it when a payload has a field past the required ones (or a
-- subject with a line break), herald._validate to name the field. Locks: none.
CREATE OR REPLACE FUNCTION herald._payload_problem(kind text, payload jsonb)
RETURNS text[]
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
  k text;
  v jsonb;
  e jsonb;
  i integer;
  p text;
BEGIN
  IF NOT herald._shallow(value => payload) THEN
    RETURN ARRAY['payload', 'is nested more than 32 levels deep, more than JSON readers take'];
  END IF;
  IF kind = 'sms' THEN
    FOREACH k IN ARRAY ARRAY['text', 'body'] LOOP
      IF jsonb_typeof(payload -> k) NOT IN ('string', 'null') THEN
        RETURN ARRAY['payload.' || k, 'must be a string'];
      END IF;
    END LOOP;
  END IF;
  IF kind = 'sms' AND payload ?| '{content_sid,content_variables}'::text[] THEN
    IF jsonb_typeof(payload -> 'content_sid') IS DISTINCT FROM 'string' OR payload ->> 'content_sid' !~ '^HX[0-9a-fA-F]{32}$' THEN
      RETURN ARRAY['payload.content_sid', 'must be a Twilio Content template SID, HX and 32 hexadecimal digits (content_variables needs one)'];
    END IF;
    k := (SELECT min(f) FROM unnest('{text,body,media_urls}'::text[]) AS f WHERE payload ? f);
    IF k IS NOT NULL THEN
      RETURN ARRAY['payload.' || k, 'is not sent with content_sid: the template is the message'];
    END IF;
    v := payload -> 'content_variables';
    IF v IS NOT NULL AND (jsonb_typeof(v) <> 'object' OR (SELECT count(*) FROM jsonb_object_keys(v)) NOT BETWEEN 1 AND 100
                          OR v @? 'strict $.* ? (@.type() != "string")') THEN
      RETURN ARRAY['payload.content_variables', 'must be an object of 1 to 100 strings (the template''s placeholders)'];
    END IF;
  END IF;
  IF kind = 'sms' AND payload ? 'media_urls' THEN
    v := payload -> 'media_urls';
    IF jsonb_typeof(v) <> 'array' OR jsonb_array_length(v) NOT BETWEEN 1 AND 10 THEN
      RETURN ARRAY['payload.media_urls', 'must be an array of 1 to 10 URLs'];
    END IF;
    FOR i IN 0 .. jsonb_array_length(v) - 1 LOOP
      e := v -> i;
      IF jsonb_typeof(e) <> 'string' OR length(e #>> '{}') > 2048
         OR e #>> '{}' !~ ('^(?:' || herald._recipient_pattern(kind => 'webhook') || ')$') THEN
        RETURN ARRAY[format('payload.media_urls[%s]', i), 'must be an http(s) URL of at most 2048 characters'];
      END IF;
    END LOOP;
  END IF;
  IF kind <> 'email' THEN
    RETURN NULL;
  END IF;

  FOREACH k IN ARRAY ARRAY['subject', 'text', 'html', 'body'] LOOP
    IF jsonb_typeof(payload -> k) NOT IN ('string', 'null') THEN
      RETURN ARRAY['payload.' || k, 'must be a string'];
    END IF;
  END LOOP;
  IF coalesce(payload ->> 'subject' ~ '[\r\n]', false) THEN
    RETURN ARRAY['payload.subject', 'must be one line (no line breaks)'];
  END IF;
  FOREACH k IN ARRAY ARRAY['from', 'reply_to'] LOOP
    IF payload ? k AND (jsonb_typeof(payload -> k) <> 'string' OR length(payload ->> k) NOT BETWEEN 1 AND 320
                        OR herald._mailbox(value => payload ->> k) IS NULL) THEN
      RETURN ARRAY['payload.' || k, 'must be an address or a name and an address, Ana Lima <ana@example.com>, of 1 to 320 characters'];
    END IF;
  END LOOP;
  FOREACH k IN ARRAY ARRAY['cc', 'bcc'] LOOP
    CONTINUE WHEN NOT payload ? k;
    IF jsonb_typeof(payload -> k) <> 'array' OR jsonb_array_length(payload -> k) NOT BETWEEN 1 AND 50 THEN
      RETURN ARRAY['payload.' || k, 'must be an array of 1 to 50 e-mail addresses'];
    END IF;
    v := (SELECT a FROM jsonb_array_elements(payload -> k) AS a
          WHERE jsonb_typeof(a) <> 'string' OR NOT herald._email_address(recipient => a #>> '{}') LIMIT 1);
    IF v IS NOT NULL THEN -- the first that is no address, and why
      RETURN ARRAY['payload.' || k, CASE WHEN jsonb_typeof(v) = 'string' THEN (herald._address_problem(address => v #>> '{}'))[1]
                                         ELSE 'must be an array of 1 to 50 e-mail addresses' END];
    END IF;
  END LOOP;

  IF payload ? 'headers' THEN
    v := payload -> 'headers';
    IF jsonb_typeof(v) <> 'object' OR (SELECT count(*) FROM jsonb_object_keys(v)) > 50 THEN
      RETURN ARRAY['payload.headers', 'must be an object of at most 50 header names to strings'];
    END IF;
    FOR k, e IN SELECT h.key, h.value FROM jsonb_each(v) AS h ORDER BY h.key LOOP
      IF k !~ '^[!-9;-~]{1,76}$' OR lower(k) IN ('from', 'to', 'cc', 'bcc', 'subject', 'message-id', 'reply-to',
          'date', 'content-type', 'mime-version', 'content-transfer-encoding',
          'sender', 'resent-from', 'resent-sender', 'return-path') THEN
        RETURN ARRAY['payload.headers.' || k, 'is not a header a payload may set (printable ASCII without colon; not one herald sets, nor a sender''s identity)'];
      END IF;
      -- Providers' control headers (recipients, suppression bypass, another identity)
      -- and the trace and authentication headers of mail servers.
      IF lower(k) ~ ('^(x-smtpapi|received|received-spf|delivered-to|dkim-signature|domainkey-signature'
                     '|authentication-results|arc-[a-z-]+'
                     '|(x-sg|x-mc|x-mailgun|x-ses|x-msys|x-pm|x-mj|x-mailjet|x-mailin|x-ms-exchange)-.*)$') THEN
        RETURN ARRAY['payload.headers.' || k, 'is a provider''s control header or a mail server''s trace or authentication header, which only the provider or the servers set'];
      END IF;
      IF jsonb_typeof(e) <> 'string' OR length(k) + 2 + octet_length(e #>> '{}') > 998 OR e #>> '{}' ~ '[\r\n]' THEN
        RETURN ARRAY['payload.headers.' || k, 'must be a string on one line, within 998 bytes with its name and ": " (RFC 5322''s line limit)'];
      END IF;
    END LOOP;
  END IF;

  IF payload ? 'attachments' THEN
    v := payload -> 'attachments';
    IF jsonb_typeof(v) <> 'array' OR jsonb_array_length(v) NOT BETWEEN 1 AND 10 THEN
      RETURN ARRAY['payload.attachments', 'must be an array of 1 to 10 attachment objects'];
    END IF;
    FOR i IN 0 .. jsonb_array_length(v) - 1 LOOP
      e := v -> i;
      p := format('payload.attachments[%s]', i);
      IF jsonb_typeof(e) <> 'object' THEN
        RETURN ARRAY[p, 'must be an object {filename, content, content_type, disposition, content_id}'];
      END IF;
      k := (SELECT min(a) FROM jsonb_object_keys(e) AS a
            WHERE a NOT IN ('filename', 'content', 'content_type', 'disposition', 'content_id'));
      IF k IS NOT NULL THEN
        RETURN ARRAY[p || '.' || k, 'is not an attachment field (filename, content, content_type, disposition, content_id)'];
      END IF;
      IF jsonb_typeof(e -> 'filename') IS DISTINCT FROM 'string' OR length(e ->> 'filename') NOT BETWEEN 1 AND 255
         OR e ->> 'filename' ~ '[[:cntrl:]"\\/]' THEN
        RETURN ARRAY[p || '.filename', 'must be a name of 1 to 255 characters without control characters, quotes or slashes'];
      END IF;
      -- Executables from the company's own domain: malware with its reputation. The
      -- types Gmail refuses (support.google.com/mail/answer/6590); Windows drops
      -- trailing dots and spaces, so "invoice.exe." is an .exe.
      IF rtrim(lower(e ->> 'filename'), '. ') ~ ('\.(ade|adp|apk|appx|appxbundle|bat|cab|chm|cmd|com|cpl|diagcab|diagcfg|'
          || 'diagpkg|dll|dmg|ex_|exe|hta|img|ins|iso|isp|jar|jnlp|js|jse|lib|lnk|mde|msc|msi|msix|msixbundle|msp|mst|nsh|'
          || 'pif|ps1|scr|sct|shb|sys|vb|vbe|vbs|vhd|vxd|wsc|wsf|wsh|xll)$') THEN
        RETURN ARRAY[p || '.filename', 'is an executable type mail providers refuse (.exe, .js, .scr, …): link to the file instead'];
      END IF;
      IF jsonb_typeof(e -> 'content') IS DISTINCT FROM 'string' OR e ->> 'content' = ''
         OR NOT herald._base64(text => e ->> 'content') THEN
        RETURN ARRAY[p || '.content', 'must be non-empty base64 (RFC 4648)'];
      END IF;
      IF e ? 'content_type' AND (jsonb_typeof(e -> 'content_type') <> 'string'
         OR e ->> 'content_type' !~ '^[A-Za-z0-9!#$&^_.+-]{1,64}/[A-Za-z0-9!#$&^_.+-]{1,64}$') THEN
        RETURN ARRAY[p || '.content_type', 'must be a media type such as application/pdf'];
      END IF;
      IF e ? 'disposition' AND (e -> 'disposition') NOT IN ('"attachment"', '"inline"') THEN
        RETURN ARRAY[p || '.disposition', 'must be attachment or inline'];
      END IF;
      IF e ? 'content_id' AND (jsonb_typeof(e -> 'content_id') <> 'string' OR e ->> 'content_id' !~ '^[!-;=?-~]{1,128}$') THEN
        RETURN ARRAY[p || '.content_id', 'must be 1 to 128 printable characters without <, > or space'];
      END IF;
    END LOOP;
  END IF;

  IF payload ? 'template_id' AND (jsonb_typeof(payload -> 'template_id') <> 'string'
                                  OR payload ->> 'template_id' !~ '^d-[0-9a-f]{32}$') THEN
    RETURN ARRAY['payload.template_id', 'must be a dynamic template id, d- and 32 hexadecimal digits'];
  END IF;
  IF payload ? 'dynamic_template_data' AND (jsonb_typeof(payload -> 'dynamic_template_data') <> 'object'
                                            OR NOT payload ? 'template_id') THEN
    RETURN ARRAY['payload.dynamic_template_data', 'must be an object, given with template_id'];
  END IF;
  IF payload ? 'categories' THEN
    v := payload -> 'categories';
    IF jsonb_typeof(v) <> 'array' OR jsonb_array_length(v) NOT BETWEEN 1 AND 10
       OR EXISTS (SELECT FROM jsonb_array_elements(v) AS c
                  WHERE jsonb_typeof(c) <> 'string' OR length(c #>> '{}') NOT BETWEEN 1 AND 255 OR c #>> '{}' ~ '[[:cntrl:]]') THEN
      RETURN ARRAY['payload.categories', 'must be an array of 1 to 10 strings of 1 to 255 characters'];
    END IF;
  END IF;
  IF payload ? 'custom_args' THEN
    v := payload -> 'custom_args';
    IF jsonb_typeof(v) <> 'object' OR octet_length(v::text) >= 10000
       OR EXISTS (SELECT FROM jsonb_each(v) AS a WHERE jsonb_typeof(a.value) <> 'string') THEN
      RETURN ARRAY['payload.custom_args', 'must be an object of strings, under 10000 bytes'];
    END IF;
    IF v ? 'herald_id' THEN
      RETURN ARRAY['payload.custom_args.herald_id', 'is set by herald'];
    END IF;
  END IF;
  RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION herald._payload_problem(text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION herald._payload_problem(text, jsonb) IS
  'Private: the first problem of a payload''s optional fields as {field, message}, or NULL.';
