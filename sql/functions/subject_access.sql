-- herald.subject_access(kind, recipient) — what herald holds about one person (a
-- person's right of access, GDPR Art. 15), matched by mailbox as herald.forget matches
-- (herald._mailbox_key): every message to them (role 'to') and every e-mail that
-- copied them in cc or bcc (role 'copy'), on channels of `kind`, with its producer,
-- channel, state, times, delivery outcome and payload (what they were, or would be,
-- sent), oldest first, each with whether the address is suppressed now (`suppressed`;
-- herald.is_suppressed answers it without messages). Errors: 22V12 kind, recipient.
-- Index: none: scans of herald.messages (recipients, copies), a rare admin act.
-- Locks: none. Admin only.
CREATE OR REPLACE FUNCTION herald.subject_access(kind text, recipient text)
RETURNS TABLE (message_id bigint, role text, producer text, channel text, status text, created_at timestamptz,
               finished_at timestamptz, outcome text, outcome_at timestamptz, payload jsonb, suppressed boolean)
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
  IF subject_access.kind IS NULL OR subject_access.kind NOT IN ('email', 'sms', 'webhook', 'custom') THEN
    PERFORM herald._reject('22V12', 'kind', format('%s is not a channel kind (email, sms, webhook, custom)',
                                                   coalesce(quote_literal(subject_access.kind), 'NULL')));
  END IF;
  IF subject_access.recipient IS NULL OR subject_access.recipient = '' THEN
    PERFORM herald._reject('22V12', 'recipient', 'must be a non-empty string');
  END IF;
  v_key := herald._mailbox_key(kind => subject_access.kind, recipient => subject_access.recipient);
  RETURN QUERY
  WITH found AS (
    SELECT m.id, 'to'::text AS role, m.producer::text, m.channel, m.status, m.created_at, m.finished_at, m.outcome,
           m.outcome_at, m.payload
    FROM herald.messages m JOIN herald.channels c ON c.name = m.channel
    WHERE c.kind = subject_access.kind
      AND herald._mailbox_key(kind => c.kind, recipient => m.recipient) = v_key
    UNION ALL
    SELECT m.id, 'copy', m.producer::text, m.channel, m.status, m.created_at, m.finished_at, NULL, NULL, m.payload
    FROM herald.messages m JOIN herald.channels c ON c.name = m.channel
    WHERE subject_access.kind = 'email' AND c.kind = 'email' AND (m.payload ? 'cc' OR m.payload ? 'bcc')
      AND EXISTS (SELECT FROM jsonb_array_elements(coalesce(m.payload -> 'cc', '[]') || coalesce(m.payload -> 'bcc', '[]')) a
                  WHERE herald._mailbox_key(kind => 'email', recipient => a #>> '{}') = v_key)
  )
  SELECT f.id, f.role, f.producer, f.channel, f.status, f.created_at, f.finished_at, f.outcome, f.outcome_at, f.payload,
         EXISTS (SELECT FROM herald._suppression(kind => subject_access.kind, recipient => subject_access.recipient, now => now()))
  FROM found f
  ORDER BY f.created_at, f.id;
END
$$;

REVOKE ALL ON FUNCTION herald.subject_access(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.subject_access(text, text) TO herald_admin;
COMMENT ON FUNCTION herald.subject_access(text, text) IS
  'What herald holds about a person (right of access): the messages to them or copying them, with state, outcome and payload.';
