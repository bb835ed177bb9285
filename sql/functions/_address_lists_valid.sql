-- herald._address_lists_valid(payload) — true when the e-mail payload's cc and bcc,
-- where present, are arrays of 1 to 50 strings that are e-mail addresses
-- (herald._email_address). herald._valid and herald._validate share it. Inlined
-- SQL. Locks: none.
CREATE OR REPLACE FUNCTION herald._address_lists_valid(payload jsonb)
RETURNS boolean
LANGUAGE sql
STABLE
AS $$
  SELECT NOT EXISTS (
    SELECT FROM unnest('{cc,bcc}'::text[]) AS k
    WHERE payload ? k
      AND CASE WHEN jsonb_typeof(payload -> k) <> 'array' THEN true
               ELSE jsonb_array_length(payload -> k) NOT BETWEEN 1 AND 50
                    OR EXISTS (SELECT FROM jsonb_array_elements(payload -> k) AS e
                               WHERE jsonb_typeof(e) <> 'string' OR NOT herald._email_address(recipient => e #>> '{}'))
          END)
$$;

REVOKE ALL ON FUNCTION herald._address_lists_valid(jsonb) FROM PUBLIC;
COMMENT ON FUNCTION herald._address_lists_valid(jsonb) IS
  'Private: whether an e-mail payload''s cc and bcc are arrays of 1 to 50 e-mail addresses.';
