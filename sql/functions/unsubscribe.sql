-- herald.unsubscribe(message_id, now) — the recipient of a message asked to receive no
-- more (a one-click List-Unsubscribe link, RFC 8058): record an 'unsubscribed' event
-- for it through herald.record_delivery_events (source 'unsubscribe', event id the
-- message id), which sets the outcome, logs it and puts the recipient on
-- herald.suppressions. True when recorded now or before; false when no such message
-- is stored (purged: the caller must not claim the unsubscribe was taken). Who may
-- call it decides who may unsubscribe: herald checks no link; the caller does.
-- Errors: 22V12 message_id NULL, those of herald.record_delivery_events. Index:
-- messages_pkey. Locks: the message FOR KEY SHARE (a purge waits), then those of
-- herald.record_delivery_events. SECURITY DEFINER for herald_events.
CREATE OR REPLACE FUNCTION herald.unsubscribe(message_id bigint, now timestamptz DEFAULT now())
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => unsubscribe.now); -- first: a forged clock changes nothing
BEGIN
  IF unsubscribe.message_id IS NULL THEN
    PERFORM herald._reject(code => '22V12', field => 'message_id', message => 'must not be NULL');
  END IF;
  PERFORM FROM herald.messages m WHERE m.id = unsubscribe.message_id FOR KEY SHARE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM herald.record_delivery_events(source => 'unsubscribe', now => unsubscribe.now,
    events => jsonb_build_array(jsonb_build_object('event_id', unsubscribe.message_id::text,
                                                   'message_id', unsubscribe.message_id, 'event', 'unsubscribed')));
  RETURN true;
END
$$;

REVOKE ALL ON FUNCTION herald.unsubscribe(bigint, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.unsubscribe(bigint, timestamptz) TO herald_events, herald_admin;
COMMENT ON FUNCTION herald.unsubscribe(bigint, timestamptz) IS
  'Record that a message''s recipient unsubscribed (one-click link): outcome, log event, suppression; false when the message is gone.';
