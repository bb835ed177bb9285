-- 023_log_statistics.sql — ANALYZE leaves out the event arrays of herald.log_statements.
--
-- Each row holds a statement's events as four arrays of up to 10,000 elements
-- (message_ids, channels, key_hashes, details). ANALYZE computes element statistics
-- for an array column from every element of every sampled row, so analysing the
-- log took time in proportion to the events it held: about 200 ms of CPU for a log
-- of 400 rows of 1,000 events (a 200,000-message drain), and seconds for a log
-- kept for days, each time autovacuum or herald.refresh_statistics analyses it.
-- No herald statement filters, joins or sorts on these columns (they are unnested
-- and read by position), so the planner has no use for their statistics: a
-- statistics target of 0 makes ANALYZE skip them (1 to 4 ms for the same 400
-- rows). The other columns (seq, kind, at, first_offset) keep theirs.
ALTER TABLE herald.log_statements
  ALTER COLUMN message_ids SET STATISTICS 0,
  ALTER COLUMN channels SET STATISTICS 0,
  ALTER COLUMN key_hashes SET STATISTICS 0,
  ALTER COLUMN details SET STATISTICS 0;
