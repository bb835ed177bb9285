-- herald._suppression_reason(kind, event, type, code) — the reason a delivery outcome
-- puts the recipient on herald.suppressions, or NULL when it does not: a hard bounce
-- ('bounced'), a complaint, an unsubscribe; and an 'undelivered' one (a provider's
-- event, or herald.fail's permanent refusal of a send) whose code says the address
-- can never take a message of the kind ('bounced'): e-mail, an SMTP reply '5xx 5.1.1',
-- or the bare status of a bounce, '5.1.1' (no such mailbox), 5.1.2 (no such domain),
-- 5.1.6 (mailbox moved), 5.1.10 (null MX); SMS, Twilio 21211 (invalid number), 21614
-- (not a mobile number), 21635 and 30006 (landline), 30005 (unknown handset);
-- webhook, HTTP 410 Gone (the receiver says the endpoint is removed for good). Not Twilio 21610 (the recipient texted
-- STOP): Twilio refuses those sends itself, at no charge, and lifts the block when the
-- recipient texts START, which herald would not see. One SQL expression, inlined.
-- Locks: none.
CREATE OR REPLACE FUNCTION herald._suppression_reason(kind text, event text, type text, code text)
RETURNS text
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT CASE
           WHEN event = 'bounced' AND type = 'hard' THEN 'bounced'
           WHEN event IN ('complained', 'unsubscribed') THEN event
           WHEN event = 'undelivered' AND (
                  (kind = 'email' AND code ~ '^(5[0-9][0-9] )?5\.1\.(1|2|6|10)$')
               OR (kind = 'sms' AND code IN ('21211', '21614', '21635', '30005', '30006'))
               OR (kind = 'webhook' AND code = '410'))
             THEN 'bounced'
         END
$$;

REVOKE ALL ON FUNCTION herald._suppression_reason(text, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._suppression_reason(text, text, text, text) IS
  'Private: the suppression reason of a delivery outcome (hard bounce, complaint, unsubscribe, a refusal code that rules the address out), or NULL.';
