-- 024_log_receipts.sql — a statement's 'sent' events keep their receipts as typed
-- arrays; the JSON detail is built when the log is read.
--
-- Until release 15, herald.complete built one jsonb object per delivered message,
-- {"provider_message_id": …, "attempts": n}, into herald.log_statements.details:
-- about 8 million of the 157 million instructions a claim of 1,000 and its complete
-- cost (bench/instructions.sh, provider ids set), on the delivery path, while the
-- log's readers may come later or never. Now complete stores the two values per event
-- in these columns and leaves details NULL; the view herald.log and herald.log_read
-- (herald._log_after) build the same detail from them, so what readers see is
-- unchanged. Rows written before keep their details and read as before.
--
--   provider_message_ids  text[]     event i's provider message id (NULL: none); NULL
--                                    when no event of the row has one
--   attempts              integer[]  event i's attempts count; NULL on rows that
--                                    keep their details as JSON (every other kind,
--                                    and 'sent' rows written before release 15)
--
-- Like the other arrays: lz4 where the server has it (012_log_lz4.sql), no planner
-- statistics (023_log_statistics.sql). herald.log_sequence checks their lengths as
-- it checks the others'.
ALTER TABLE herald.log_statements
  ADD COLUMN provider_message_ids text[],
  ADD COLUMN attempts integer[];
COMMENT ON COLUMN herald.log_statements.provider_message_ids IS
  'sent events: the provider message id of event i (NULL: none); NULL when no event of the row has one.';
COMMENT ON COLUMN herald.log_statements.attempts IS
  'sent events: the attempts of event i; with it set, details is NULL and each event''s detail is built when read.';
ALTER TABLE herald.log_statements
  ALTER COLUMN provider_message_ids SET STATISTICS 0,
  ALTER COLUMN attempts SET STATISTICS 0;
DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_settings
             WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
    ALTER TABLE herald.log_statements
      ALTER COLUMN provider_message_ids SET COMPRESSION lz4,
      ALTER COLUMN attempts SET COMPRESSION lz4;
  END IF;
END
$$;
