-- 006_code.sql — installed herald's functions, views and triggers in release 2.
--
-- Superseded by 008_code.sql, which installs the whole current code (and drops what
-- releases 1 and 2 had and release 3 does not), so this step now does nothing: a
-- database migrated by release 2 already ran it, and a new install, or an upgrade
-- from release 1, gets its code at 008.
-- Emptied rather than kept, because a code migration includes the current files of
-- sql/functions as templates: kept, it would install today's functions before the
-- tables they need exist (see 003_code.sql).
SELECT 1;
