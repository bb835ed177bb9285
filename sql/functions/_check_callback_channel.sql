-- herald._check_callback_channel(channel) — refuse a callback channel another producer
-- may enqueue on: its herald.channels.producers must be exactly the callbacks' owner
-- (herald._callback_names), or that producer could send webhooks signed with the
-- channel's keys to any producer's callback URL, and they would pass for herald's
-- callbacks. For the trigger producers_callbacks and herald.dispatch_callbacks (whose
-- refused producers' callbacks are set aside). Errors: 42501 callback_channel.
-- Index: channels_pkey. Locks: none.
CREATE OR REPLACE FUNCTION herald._check_callback_channel(channel text)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
  IF NOT EXISTS (SELECT FROM herald.channels c
                 WHERE c.name = _check_callback_channel.channel AND c.producers = ARRAY[(herald._callback_names()).producer]) THEN
    PERFORM herald._reject(code => '42501', field => 'callback_channel',
      message => format('channel %L must be open to %L alone (herald.channels.producers): another producer on it could send signed callbacks',
                        _check_callback_channel.channel, (herald._callback_names()).producer),
      hint => format('UPDATE herald.channels SET producers = %L WHERE name = %L',
                     ARRAY[(herald._callback_names()).producer]::text, _check_callback_channel.channel));
  END IF;
END
$$;
REVOKE ALL ON FUNCTION herald._check_callback_channel(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._check_callback_channel(text) IS
  'Private: refuse a callback channel that producers other than the callbacks'' owner may enqueue on.';
