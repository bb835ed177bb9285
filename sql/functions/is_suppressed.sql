-- herald.is_suppressed(channel, recipient) — whether a message to recipient on channel
-- would end 'suppressed' now (an active entry of herald.suppressions for the channel's
-- kind), for a producer that wants to know before it enqueues; never an error for an
-- unknown channel (false). Errors: 22V12 channel or recipient NULL.
-- Index: channels_pkey, suppressions_pkey. Locks: none. For herald_producer.
CREATE OR REPLACE FUNCTION herald.is_suppressed(channel text, recipient text)
RETURNS boolean
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  PERFORM herald._check_not_null(ARRAY['channel', 'recipient'], ARRAY[channel IS NOT NULL, recipient IS NOT NULL]);
  RETURN EXISTS (SELECT FROM herald.channels c,
                   herald._suppression(kind => c.kind, recipient => is_suppressed.recipient, now => now())
                 WHERE c.name = is_suppressed.channel);
END
$$;

REVOKE ALL ON FUNCTION herald.is_suppressed(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.is_suppressed(text, text) TO herald_producer, herald_admin;
COMMENT ON FUNCTION herald.is_suppressed(text, text) IS
  'Whether a message to the recipient on the channel would end suppressed now.';
