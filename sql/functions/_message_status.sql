-- herald._message_status(m) — what a producer may see of message m: its state,
-- attempts, times and deadline, the class and short code of its last failure (never
-- the provider's or receiver's text, which stays in messages.errors), the provider's
-- receipt and the delivery outcome. No payload, recipient or metadata. The one rule
-- for herald.status and the status callbacks of herald.dispatch_callbacks.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._message_status(m herald.messages)
RETURNS herald.message_status
LANGUAGE sql
STABLE
AS $$
  SELECT m.id, m.channel, m.status, m.attempts, m.max_attempts, m.run_at, m.created_at,
         m.finished_at, m.expires_at, m.last_error_class, m.last_error_code, m.provider_message_id,
         m.outcome, m.outcome_type, m.outcome_code, m.outcome_at
$$;
REVOKE ALL ON FUNCTION herald._message_status(herald.messages) FROM PUBLIC;
COMMENT ON FUNCTION herald._message_status(herald.messages) IS
  'Private: a message as its producer sees it (herald.status, status callbacks).';
