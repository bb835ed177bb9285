-- herald._email_addresses(payload) — how many addresses an e-mail goes to: its
-- recipient and the entries of its payload's cc and bcc (arrays: herald._payload_problem
-- has checked them), which the channel's max_recipients bounds. For herald._valid and
-- herald._validate. IMMUTABLE SQL, one expression, inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._email_addresses(payload jsonb)
RETURNS integer
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT 1 + coalesce(jsonb_array_length(payload -> 'cc'), 0) + coalesce(jsonb_array_length(payload -> 'bcc'), 0)
$$;
REVOKE ALL ON FUNCTION herald._email_addresses(jsonb) FROM PUBLIC;
COMMENT ON FUNCTION herald._email_addresses(jsonb) IS
  'Private: how many addresses an e-mail goes to (its recipient, cc and bcc), for max_recipients (inlined).';
