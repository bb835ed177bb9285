-- herald._person_messages(kind, mailbox) — the messages on channels of `kind` that
-- reach a person's mailbox (herald._mailbox_key): those sent to it (role 'to') and the
-- e-mails that copy it in cc or bcc (role 'copy'). The one rule of herald.forget and
-- herald.subject_access. Index: none: two scans of herald.messages (recipients,
-- copies). Locks: none.
CREATE OR REPLACE FUNCTION herald._person_messages(kind text, mailbox text)
RETURNS TABLE (id bigint, role text)
LANGUAGE sql
STABLE
AS $$
  SELECT m.id, 'to'
  FROM herald.messages m JOIN herald.channels c ON c.name = m.channel
  WHERE c.kind = _person_messages.kind AND herald._mailbox_key(kind => c.kind, recipient => m.recipient) = mailbox
  UNION ALL
  SELECT m.id, 'copy'
  FROM herald.messages m JOIN herald.channels c ON c.name = m.channel
  WHERE _person_messages.kind = 'email' AND c.kind = 'email' AND (m.payload ? 'cc' OR m.payload ? 'bcc')
    AND EXISTS (SELECT FROM jsonb_array_elements(coalesce(m.payload -> 'cc', '[]') || coalesce(m.payload -> 'bcc', '[]')) a
                WHERE herald._mailbox_key(kind => 'email', recipient => a #>> '{}') = mailbox)
$$;

REVOKE ALL ON FUNCTION herald._person_messages(text, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._person_messages(text, text) IS
  'Private: the messages sent to a mailbox or copying it (herald.forget, herald.subject_access).';
