-- herald.subject_access(kind, recipient) — what herald holds about one person (a
-- person's right of access, GDPR Art. 15), found as herald.forget finds them
-- (herald._person_messages): every message to them (role 'to') and every e-mail that
-- copied them in cc or bcc (role 'copy'), on channels of `kind`, with its producer,
-- channel, state, times, delivery outcome, time zone and payload (what they were, or
-- would be, sent), oldest first, each with whether the address is suppressed now (`suppressed`;
-- herald.is_suppressed answers it without messages). Errors: 22V12 kind, recipient
-- (herald._person_key). Index: none: herald._person_messages' scans, a rare admin act.
-- Locks: none. Admin only.
CREATE OR REPLACE FUNCTION herald.subject_access(kind text, recipient text)
RETURNS TABLE (message_id bigint, role text, producer text, channel text, status text, created_at timestamptz,
               finished_at timestamptz, outcome text, outcome_at timestamptz, recipient_zone text, payload jsonb,
               suppressed boolean)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off -- as herald.forget: its scans' filters are cheap
AS $$
#variable_conflict use_column
DECLARE
  v_key text;
BEGIN
  v_key := herald._person_key(kind => subject_access.kind, recipient => subject_access.recipient);
  RETURN QUERY
  SELECT m.id, p.role, m.producer::text, m.channel, m.status, m.created_at, m.finished_at,
         CASE WHEN p.role = 'to' THEN m.outcome END, CASE WHEN p.role = 'to' THEN m.outcome_at END,
         CASE WHEN p.role = 'to' THEN m.recipient_zone END, m.payload,
         EXISTS (SELECT FROM herald._suppression(kind => subject_access.kind, recipient => subject_access.recipient, now => now()))
  FROM herald._person_messages(kind => subject_access.kind, mailbox => v_key) p
  JOIN herald.messages m ON m.id = p.id
  ORDER BY m.created_at, m.id;
END
$$;

REVOKE ALL ON FUNCTION herald.subject_access(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.subject_access(text, text) TO herald_admin;
COMMENT ON FUNCTION herald.subject_access(text, text) IS
  'What herald holds about a person (right of access): the messages to them or copying them, with state, outcome and payload.';
