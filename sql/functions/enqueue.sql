-- herald.enqueue(channel, recipient, payload, …) — store one notification; returns its id.
--
-- The single-message form of herald.enqueue_batch: both are thin wrappers over
-- herald._enqueue, which holds the validation rules and SQLSTATEs (HR001–HR010, the
-- field in the error's COLUMN). Optional arguments:
--   run_at           when to send (NULL = now); future = scheduled
--   priority         -100..100, lower runs first (default 0)
--   idempotency_key  a repeat returns the first message's id and stores nothing
--   ordering_key     messages with the same key are delivered one at a time, in id order
--   max_attempts     1..100 (NULL = the channel's max_attempts)
--   metadata         a JSON object kept with the message, not sent
--   now              the clock (tests pass a fixed time)
-- Runs inside the caller's transaction: the message exists once that commits.
-- SECURITY DEFINER: herald_producer may call it without table privileges.
-- Locks: ROW EXCLUSIVE on herald.messages.
CREATE OR REPLACE FUNCTION herald.enqueue(
  channel text,
  recipient text,
  payload jsonb,
  run_at timestamptz DEFAULT NULL,
  priority integer DEFAULT 0,
  idempotency_key text DEFAULT NULL,
  ordering_key text DEFAULT NULL,
  max_attempts integer DEFAULT NULL,
  metadata jsonb DEFAULT NULL,
  now timestamptz DEFAULT now()
) RETURNS bigint
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT (herald._enqueue(
    ARRAY[channel], ARRAY[recipient], ARRAY[payload], ARRAY[run_at], ARRAY[priority],
    ARRAY[idempotency_key], ARRAY[ordering_key], ARRAY[max_attempts], ARRAY[metadata],
    false, now))[1]
$$;

REVOKE ALL ON FUNCTION herald.enqueue(text, text, jsonb, timestamptz, integer, text, text, integer, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.enqueue(text, text, jsonb, timestamptz, integer, text, text, integer, jsonb, timestamptz)
  TO herald_producer, herald_admin;
