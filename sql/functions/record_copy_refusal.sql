-- herald.record_copy_refusal(message_id, recipient, code, now) — a runner's provider
-- refused one copy (cc, bcc) of a message for good at send, and the message went to
-- the others: record it for that copy as an 'undelivered' event (source 'send', once
-- per message and address) through herald.record_delivery_events, which suppresses
-- the copy when its code rules the address out (herald._suppression_reason), sets no
-- outcome and logs nothing. True when recorded, now or before; false for an address
-- that is not one of the message's copies (the message's own recipient included: its
-- refusal is herald.fail's). Errors: 22V12 message_id, recipient or code NULL, code
-- over 64 characters; those of record_delivery_events. Index: messages_pkey,
-- channels_pkey. Locks: those of record_delivery_events. SECURITY DEFINER for
-- herald_worker.
CREATE OR REPLACE FUNCTION herald.record_copy_refusal(message_id bigint, recipient text, code text,
                                                      now timestamptz DEFAULT now())
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => record_copy_refusal.now); -- first: a forged clock changes nothing
  r record;
BEGIN
  PERFORM herald._check_not_null(ARRAY['message_id', 'recipient', 'code'],
    ARRAY[record_copy_refusal.message_id IS NOT NULL, record_copy_refusal.recipient IS NOT NULL, record_copy_refusal.code IS NOT NULL]);
  IF length(record_copy_refusal.code) > 64 THEN
    PERFORM herald._reject(code => '22V12', field => 'code', message => 'is over 64 characters');
  END IF;
  IF NOT EXISTS (SELECT FROM herald.messages m JOIN herald.channels c ON c.name = m.channel
                 WHERE m.id = record_copy_refusal.message_id
                   AND herald._suppression_key(kind => c.kind, recipient => m.recipient)
                       <> herald._suppression_key(kind => c.kind, recipient => record_copy_refusal.recipient)) THEN
    RETURN false; -- no such message, or its own recipient
  END IF;
  SELECT * INTO r FROM herald.record_delivery_events(source => 'send', now => record_copy_refusal.now,
    events => jsonb_build_array(jsonb_build_object(
      'event_id', 'copy ' || record_copy_refusal.message_id || ' ' || lower(record_copy_refusal.recipient),
      'message_id', record_copy_refusal.message_id, 'recipient', record_copy_refusal.recipient,
      'event', 'undelivered', 'code', record_copy_refusal.code)));
  RETURN r.unknown = 0;
END
$$;

REVOKE ALL ON FUNCTION herald.record_copy_refusal(bigint, text, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.record_copy_refusal(bigint, text, text, timestamptz) TO herald_worker, herald_admin;
COMMENT ON FUNCTION herald.record_copy_refusal(bigint, text, text, timestamptz) IS
  'Record a provider''s refusal of one copy (cc, bcc) of a sent message: the copy is suppressed when the code rules it out.';
