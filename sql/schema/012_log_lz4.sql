-- 012_log_lz4.sql — the event arrays of herald.log_statements are compressed with
-- lz4 where the server has it.
--
-- A 1,000-message complete writes one row whose arrays (message_ids, channels,
-- key_hashes, details) hold about 90 kB before compression: too big for a heap page,
-- so PostgreSQL compresses them on the way into TOAST. With the default method
-- (pglz) that took about 2.1 ms per row; lz4 takes about 0.6 ms. The row grows a
-- little: 13.3 kB instead of 11.9 kB for 1,000 events (message_ids 4.0 kB instead of
-- 3.3, details 5.2 instead of 4.5; channels 0.1 either way; key_hashes, hashes, do
-- not compress). Measured on 200 fresh rows per method (README "Performance").
-- New rows only: existing values keep pglz, and both are read alike.
-- A server built without lz4 (configure --with-lz4; the PGDG and Debian packages
-- have it) keeps pglz: the migration checks default_toast_compression's allowed
-- values and does nothing there.
DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_settings
             WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
    ALTER TABLE herald.log_statements
      ALTER COLUMN message_ids SET COMPRESSION lz4,
      ALTER COLUMN channels SET COMPRESSION lz4,
      ALTER COLUMN key_hashes SET COMPRESSION lz4,
      ALTER COLUMN details SET COMPRESSION lz4;
  END IF;
END
$$;
