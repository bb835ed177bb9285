-- herald._range_key(channel, recipient) — the range a recipient of channel belongs to,
-- for counting messages per range (channels.range_limit, herald.recipient_buckets):
-- sms, 'range:' and its + with the first range_digits digits ('range:+8801712');
-- webhook, 'site:' and the site of the URL's host (herald._site of herald._url_host:
-- 'site:example.co.uk' for https://a.b.Example.co.uk:8443/x, an IP address whole);
-- NULL for other kinds. The prefixes keep ranges apart from recipients in the buckets'
-- keys. STABLE SQL, inlined (herald._site is a call of its own). Locks: none.
CREATE OR REPLACE FUNCTION herald._range_key(channel herald.channels, recipient text)
RETURNS text
LANGUAGE sql
STABLE
AS $$
  SELECT CASE (channel).kind
           WHEN 'sms' THEN 'range:' || left(recipient, 1 + (channel).range_digits)
           WHEN 'webhook' THEN 'site:' || herald._site(host => herald._url_host(url => recipient))
         END
$$;
REVOKE ALL ON FUNCTION herald._range_key(herald.channels, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._range_key(herald.channels, text) IS
  'Private: the number range of an SMS recipient, or the site of a webhook URL, as herald.recipient_buckets keys it.';
