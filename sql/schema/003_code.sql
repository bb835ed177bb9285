-- 003_code.sql — installed herald's functions, views and triggers in release 1.
--
-- Superseded by 006_code.sql, which installs the whole current code (and drops what
-- release 1 had and release 2 does not), so this step now does nothing: a database
-- migrated by release 1 already ran it, and a new install gets its code at 006.
-- Emptied rather than kept, because a code migration includes the current files of
-- sql/functions as templates: kept, it would install today's functions against
-- release 1's tables (before 004 and 005 exist) and fail.
SELECT 1;
