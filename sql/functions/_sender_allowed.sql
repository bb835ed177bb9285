-- herald._sender_allowed(sender, senders) — true when an e-mail payload's from (a
-- mailbox, herald._mailbox) is one the producer may set: its address, or the
-- address's domain (written 'example.com' or '@example.com'), is an entry of senders
-- (herald.producers.senders; letter case ignored). NULL senders, or a sender that is not a mailbox: false. The one rule of
-- herald._valid and herald._validate. One SQL expression, inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._sender_allowed(sender text, senders text[])
RETURNS boolean
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT EXISTS (SELECT FROM unnest(senders) AS s, herald._mailbox(value => sender) AS a
                 WHERE lower(s) IN (lower(a), lower(split_part(a, '@', 2)), lower('@' || split_part(a, '@', 2))))
$$;

REVOKE ALL ON FUNCTION herald._sender_allowed(text, text[]) FROM PUBLIC;
COMMENT ON FUNCTION herald._sender_allowed(text, text[]) IS
  'Private: true when an e-mail payload''s from is an address, or at a domain, the producer may use.';
