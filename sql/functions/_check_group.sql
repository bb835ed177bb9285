-- herald._check_group("group") — refuse a consumer group name a consumer may not use:
-- not 1–100 of letters, digits, _ . : - starting with a letter or digit, or starting
-- with herald. (herald's own groups, such as the status callbacks' of
-- herald._callback_names). For create_consumer_group and, through
-- herald._consumer_partition, log_read, log_ack and log_dead_letter.
-- Errors: 22V12 group. Locks: none.
CREATE OR REPLACE FUNCTION herald._check_group("group" text)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
AS $$
BEGIN
  IF "group" IS NULL OR "group" !~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$' THEN
    PERFORM herald._reject('22V12', 'group', 'must be 1 to 100 letters, digits, _ . : - starting with a letter or digit');
  ELSIF "group" ^@ 'herald.' THEN
    PERFORM herald._reject('22V12', 'group', format('%L is herald''s own group; read the log with a group of your own', "group"));
  END IF;
END
$$;
REVOKE ALL ON FUNCTION herald._check_group(text) FROM PUBLIC;
COMMENT ON FUNCTION herald._check_group(text) IS
  'Private: refuse a malformed consumer group name, or one of herald''s own (herald.*).';
