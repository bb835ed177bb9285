-- herald._payload_fields(kind) — the payload fields a channel kind's senders use:
-- email subject, text, html, body, from, reply_to, headers, cc, bcc, attachments,
-- template_id, dynamic_template_data, categories, custom_args; sms text, body,
-- media_urls, content_sid, content_variables; NULL (any field) for webhook and custom. A payload with another field is
-- refused at enqueue (22V03, COLUMN 'payload.<field>'): nothing is accepted that would
-- not be sent. Past the first four (email) or two (sms), a field's rules are
-- herald._payload_problem's.
-- IMMUTABLE SQL, inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._payload_fields(kind text)
RETURNS text[]
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT CASE kind
           WHEN 'email' THEN '{subject,text,html,body,from,reply_to,headers,cc,bcc,attachments,template_id,dynamic_template_data,categories,custom_args}'::text[]
           WHEN 'sms' THEN '{text,body,media_urls,content_sid,content_variables}'::text[]
         END
$$;

REVOKE ALL ON FUNCTION herald._payload_fields(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._payload_fields(text) IS
  'Private: the payload fields a channel kind accepts (NULL: any).';
