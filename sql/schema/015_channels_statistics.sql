-- 015_channels_statistics.sql — planner statistics for herald.channels, kept fresh.
--
-- Every enqueue joins its messages to herald.channels, a table of a few rows. Never
-- analysed, it looks to the planner like ten pages (about 540 rows): so
-- herald._store_valid's join hashed the batch's 100 messages, copying each row's
-- payload into the hash table, and probed it with the channels, and herald.enqueue
-- read the channel through the primary key index instead of the table's one page.
-- Analysed, the join hashes the channels and streams the messages (2.4 % fewer
-- instructions for a 100-message enqueue_many, 4 % for one enqueue: callgrind, README
-- "Performance"). Autovacuum would never analyse it on its own (50 changed rows is
-- the default threshold), so the thresholds are 0: it is analysed after any change
-- to the channels. ANALYZE also runs here, for the rows the earlier migrations
-- inserted.
ALTER TABLE herald.channels SET (autovacuum_analyze_threshold = 0, autovacuum_analyze_scale_factor = 0);
ANALYZE herald.channels;
