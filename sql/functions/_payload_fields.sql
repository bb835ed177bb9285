-- herald._payload_fields(kind) — the payload fields a channel kind's senders use:
-- email subject, text, html, body, from, reply_to, headers, cc, bcc; sms text, body; NULL (any
-- field) for webhook and custom. A payload with another field is refused at enqueue
-- (22V03, COLUMN 'payload.<field>'): nothing is accepted that would not be sent.
-- IMMUTABLE SQL, inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._payload_fields(kind text)
RETURNS text[]
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT CASE kind
           WHEN 'email' THEN '{subject,text,html,body,from,reply_to,headers,cc,bcc}'::text[]
           WHEN 'sms' THEN '{text,body}'::text[]
         END
$$;

REVOKE ALL ON FUNCTION herald._payload_fields(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._payload_fields(text) IS
  'Private: the payload fields a channel kind accepts (NULL: any).';
