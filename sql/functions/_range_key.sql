-- herald._range_key(channel, recipient) — the range a recipient of channel belongs to,
-- for counting messages per range (channels.range_limit, herald.recipient_buckets):
-- sms, 'range:' and its + with the first range_digits digits ('range:+8801712');
-- webhook, 'site:' and the last range_labels labels of the URL's host
-- (herald._url_host: 'site:example.com' for https://a.b.Example.com:8443/x), an IP
-- address (v4 digits, v6 in brackets) whole;
-- NULL for other kinds. The prefixes keep ranges apart from recipients in the buckets'
-- keys. IMMUTABLE SQL, inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._range_key(channel herald.channels, recipient text)
RETURNS text
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT CASE (channel).kind
           WHEN 'sms' THEN 'range:' || left(recipient, 1 + (channel).range_digits)
           WHEN 'webhook' THEN 'site:' || CASE
             WHEN herald._url_host(recipient) ~ '^(\[.*\]|[0-9.]+)$' THEN herald._url_host(recipient)
             ELSE substring(herald._url_host(recipient) FROM '[^.]+(?:\.[^.]+){0,' || ((channel).range_labels - 1)::text || '}$')
           END
         END
$$;
REVOKE ALL ON FUNCTION herald._range_key(herald.channels, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._range_key(herald.channels, text) IS
  'Private: the number range of an SMS recipient, or the site of a webhook URL, as herald.recipient_buckets keys it.';
