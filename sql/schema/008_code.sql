-- 008_code.sql — installed herald's functions, views and triggers in release 3.
--
-- Superseded by 010_code.sql, which installs the whole current code (and drops what
-- earlier releases had and release 4 does not), so this step now does nothing: a
-- database migrated by release 3 already ran it, and a new install, or an upgrade
-- from an earlier release, gets its code at 010.
-- Emptied rather than kept, because a code migration includes the current files of
-- sql/functions as templates: kept, it would install today's functions (which use
-- herald.log_statements) before migration 009 creates that table (see 003_code.sql).
SELECT 1;
