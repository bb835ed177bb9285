-- herald._valid(kind, max_payload_bytes, recipient, payload, run_at, priority,
-- max_attempts, metadata, idempotency_key, ordering_key, now, checked_kind) — true
-- when a message passes every rule of herald._validate for a channel of that kind
-- and payload limit (kind NULL = unknown channel: false). checked_kind (default
-- NULL) is the kind whose recipient syntax the caller has already matched for every
-- message of the statement (herald._recipient_list_kind, once per batch): a row of
-- that kind skips its own regular expression match and keeps the rest (the e-mail
-- lengths). The set-based twin of _validate: the
-- enqueue functions check with it in the same statement that inserts, and call
-- _validate, which names the field and raises, only when it is false. It must
-- therefore never be false where _validate passes (a test compares them).
-- One SQL expression without sub-selects, so the planner inlines it.
--
-- Written for few nodes as well as few instructions per row: PostgreSQL compiles a
-- statement's expressions each time the statement runs, about 1,000 instructions
-- per node, so for herald.enqueue (one row) compiling this expression cost seven
-- times evaluating it. Hence:
--   a range test (length(recipient) <@ int4range(1, 320, '[]'), the range folded to
--   a constant when planned) instead of BETWEEN, which repeats its left side; an
--   optional field tests IS NULL first, which settles the usual NULL in one step
--   (a coalesce into the range test is a node less but 250 instructions a row more);
--   the payload rule of each kind as one SQL/JSON path test instead of a
--   herald._nonempty_string per key (seven nodes each): in strict mode a key's
--   value `> ""` holds only for a string other than "" (strings compare by code
--   point; a missing key, a number, null, an array or an object is never greater
--   than a string), and the test also costs less per row (4,150 against 6,270
--   instructions for an e-mail's). herald._validate keeps _nonempty_string, to name
--   the key that fails; the agreement test covers each kind of value. One CASE on
--   the kind holds both the recipient's and the payload's rule (one comparison of
--   the kind per row, not two).
-- The e-mail and SMS branches leave out two tests their own rules imply (release 8):
-- the recipient's 1 to 320 characters (either expression admits only ASCII, an SMS
-- number 8 to 16 characters and an e-mail address at most 254 octets) and the
-- payload being an object (in strict mode a path's `@.key` on an array or a scalar
-- is an error, so the filter is false). Those two cost 2,700 instructions a row,
-- so only webhook and custom channels, in the ELSE branch, pay them now.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._valid(
  kind text,
  max_payload_bytes integer,
  recipient text,
  payload jsonb,
  run_at timestamptz,
  priority integer,
  max_attempts integer,
  metadata jsonb,
  idempotency_key text,
  ordering_key text,
  now timestamptz,
  checked_kind text DEFAULT NULL
) RETURNS boolean
LANGUAGE sql
STABLE
AS $$
  SELECT coalesce(
        kind IS NOT NULL
    AND CASE kind
          WHEN 'email' THEN herald._email_address(recipient, coalesce(checked_kind = 'email', false))
                            AND payload @? 'strict $ ? (@.subject > "" && (@.text > "" || @.html > "" || @.body > ""))'
          WHEN 'sms' THEN (coalesce(checked_kind = 'sms', false)
                           OR recipient ~ ('^(?:' || herald._recipient_pattern('sms') || ')$'))
                          AND payload @? 'strict $ ? (@.text > "" || @.body > "")'
          ELSE length(recipient) <@ int4range(1, 320, '[]')
               AND jsonb_typeof(payload) = 'object'
               AND (kind <> 'webhook' OR coalesce(checked_kind = 'webhook', false)
                    OR recipient ~ ('^(?:' || herald._recipient_pattern('webhook') || ')$'))
        END
    AND pg_column_size(payload) <= max_payload_bytes
    AND (run_at IS NULL OR run_at BETWEEN now - interval '1 year' AND now + interval '1 year')
    AND (priority IS NULL OR priority <@ int4range(-100, 100, '[]'))
    AND (max_attempts IS NULL OR max_attempts <@ int4range(1, 100, '[]'))
    AND (metadata IS NULL OR (jsonb_typeof(metadata) = 'object' AND pg_column_size(metadata) <= 8192))
    AND (idempotency_key IS NULL OR length(idempotency_key) <@ int4range(1, 255, '[]'))
    AND (ordering_key IS NULL OR length(ordering_key) <@ int4range(1, 255, '[]')),
    false)
$$;

REVOKE ALL ON FUNCTION herald._valid(text, integer, text, jsonb, timestamptz, integer, integer, jsonb, text, text, timestamptz, text) FROM PUBLIC;
