-- herald._callback_spec(p, m, kind, "offset", at) — the status callback of the log
-- event (kind, offset, at) of message m for its producer p, as a message to enqueue:
-- a webhook on p.callback_channel to p.callback_url with ordering key message:<id>
-- (one message's callbacks go out in order) and the payload {event, offset, at,
-- idempotency_key, message: herald._message_status(m)}; NULL when p has no
-- callback_url or does not want the event (callback_events; NULL: all but accepted,
-- rerouted and deferred). The one rule of herald.dispatch_callbacks and
-- herald.redispatch_callbacks. Locks: none.
CREATE OR REPLACE FUNCTION herald._callback_spec(p herald.producers, m herald.messages, kind text, "offset" bigint, at timestamptz)
RETURNS herald.message_spec
LANGUAGE sql
STABLE
AS $$
  SELECT CASE WHEN p.callback_url IS NOT NULL
               AND CASE WHEN p.callback_events IS NULL THEN kind NOT IN ('accepted', 'rerouted', 'deferred')
                        ELSE kind = ANY (p.callback_events) END
    THEN ROW(p.callback_channel, p.callback_url,
             jsonb_build_object('event', kind, 'offset', "offset", 'at', at, 'idempotency_key', m.idempotency_key,
                                'message', to_jsonb(herald._message_status(m))),
             NULL, NULL, NULL, 'message:' || m.id, NULL, NULL, NULL, NULL)::herald.message_spec
  END
$$;
REVOKE ALL ON FUNCTION herald._callback_spec(herald.producers, herald.messages, text, bigint, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION herald._callback_spec(herald.producers, herald.messages, text, bigint, timestamptz) IS
  'Private: the status callback of one log event for its producer, as a message spec (NULL: none).';
