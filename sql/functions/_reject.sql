-- herald._reject(code, field, message, detail, hint) — raise a herald validation error.
--
-- Every input error herald raises goes through here, so each carries:
--   SQLSTATE  the stable code (docs/sql.md, "Errors"),
--   COLUMN    the offending field, machine-readable: an argument name such as
--             'recipient', or for enqueue_batch 'messages[<index>].<field>' (index from 0),
--   MESSAGE   "<field>: <what is wrong>", DETAIL and HINT for humans.
-- Clients map SQLSTATE + COLUMN; they never parse MESSAGE.
-- Locks: none. Never returns.
CREATE OR REPLACE FUNCTION herald._reject(
  code text,
  field text,
  message text,
  detail text DEFAULT NULL,
  hint text DEFAULT NULL
) RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
  -- RAISE refuses NULL options, so the optional DETAIL and HINT need their own branches.
  IF detail IS NULL AND hint IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = code, COLUMN = field, MESSAGE = field || ': ' || message;
  ELSIF detail IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = code, COLUMN = field, MESSAGE = field || ': ' || message, HINT = hint;
  ELSIF hint IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = code, COLUMN = field, MESSAGE = field || ': ' || message, DETAIL = detail;
  ELSE
    RAISE EXCEPTION USING ERRCODE = code, COLUMN = field, MESSAGE = field || ': ' || message, DETAIL = detail, HINT = hint;
  END IF;
END
$$;

REVOKE ALL ON FUNCTION herald._reject(text, text, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._reject(text, text, text, text, text) IS
  'Private: raise a herald input error with its SQLSTATE and the field in COLUMN.';
