-- 025_code.sql — installed herald's functions, views and triggers in releases 15 and 16.
--
-- Superseded by 027_code.sql, which installs the whole current code (and drops what
-- earlier releases had and release 17 does not), so this step now does nothing: a
-- database migrated by release 15 or 16 already ran it, and a new install, or an
-- upgrade from an earlier release, gets its code at 027.
-- Emptied rather than kept, because a code migration includes the current files of
-- sql/functions as templates: kept, it would install today's functions before the
-- tables of a later migration they may need exist (see 003_code.sql).
SELECT 1;
