-- 027_code.sql — install herald's functions, views and triggers (release 17).
--
-- Replaces the code of 025_code.sql (now a no-op, as are 003_code.sql, 006_code.sql,
-- 008_code.sql, 010_code.sql, 011_code.sql, 013_code.sql, 016_code.sql,
-- 017_code.sql, 018_code.sql, 019_code.sql, 020_code.sql, 021_code.sql and
-- 022_code.sql). What changed since release 16: herald.log_truncate finds the one
-- herald.log_statements row that holds its bound with a backward probe of
-- log_statements_offset_idx, locks it and cuts it before deleting the rows below
-- (it used to join every row below the bound, which the planner ran as a sequential
-- scan and hash of the whole log). No signature changes. Release 15's changes over
-- release 14 (025_code.sql): herald.complete stores its 'sent' events' receipts and
-- attempts in the typed arrays of 024_log_receipts.sql instead of one JSON detail
-- per event; the view herald.log and herald._log_after build the same detail when
-- they read such a row (the new herald._log_detail, and herald._event_detail, both
-- executable by herald_consumer and herald_admin, who read the view); herald.log_truncate cuts the new arrays with the
-- others and herald.log_sequence checks their lengths. No signature changes.
-- Release 13's changes over release 12 (022_code.sql):
-- the new view herald.queue_depth, which counts queued and processing
-- messages per channel through the partial indexes (the runner's queue-depth gauge
-- now samples it instead of herald.queue_stats, which scans the whole table);
-- herald.complete sorts the sent rows once for its log row instead of once per
-- array, and herald._event_detail builds a 'sent' detail without building and then
-- stripping its null members. No signature changes.
-- Release 12's changes over release 11: the
-- new herald.refresh_statistics, which ANALYZEs herald.messages and
-- herald.log_statements while their statistics describe a small table they have
-- outgrown (the runner calls it every poll interval), so that no connection keeps a
-- plan that scans the whole table; and herald._listening returns bigint instead of
-- void, so that it is inlined into claim_batch and log_read (its old signature is
-- dropped first: a return type cannot be replaced).
-- Release 11's changes over release 10: herald._store_valid
-- (the writer of enqueue_many and of enqueue_batch's fast path) draws the ids and
-- the log's key hashes in one statement instead of two, and stores a call whose
-- messages name one channel and leave every optional field at its default with a
-- statement that reads the channel's row once and passes the optional fields as
-- constants; any other call is stored as before. No signature changes.
-- Release 10's changes over release 9: enqueue_batch walks the batch's
-- elements with the SQL/JSON path strict $[*] in a select list, which hands them out
-- one at a time, instead of jsonb_array_elements in FROM, which first copies every
-- element into a tuple store (800 instructions an element less).
-- Release 9's changes over release 8: enqueue_batch reads a batch of plain elements
-- for less (herald._item_shape gives shape 0 to an element of at most three members
-- by one jsonb comparison, and the batch proves its channels and recipients JSON
-- strings once, through the recipients' list match or one SQL/JSON path); the body
-- of enqueue_many moved into the new herald._store_batch, which enqueue_batch's fast
-- path calls too, so that a batch it refuses goes to its own element-by-element
-- path; herald._store_valid takes the recipients' kind as a new last argument
-- (checked_kind) instead of asking herald._recipient_list_kind itself, since
-- enqueue_batch needs the answer first. Its old signature is dropped first.
-- Release 8's changes over release 7, no signature among them: herald._valid's
-- e-mail and SMS branches no longer test what their own rules imply (the
-- recipient's 1 to 320 characters, the payload being an object),
-- herald._email_address settles an address under 66 octets with one octet_length,
-- and herald._item_shape tests the element and its channel and recipient with one
-- SQL/JSON path instead of three jsonb_typeof calls.
-- Release 7's changes over release 6: a batch
-- matches its recipients' syntax once instead of once per message — the new
-- herald._recipient_list_kind matches all recipients, joined by newlines, against
-- one kind's expression (from the new herald._recipient_pattern, now the one place
-- the e-mail, SMS and webhook expressions are written), and herald._valid takes the
-- answer as a new last argument, checked_kind; herald._email_address gains
-- syntax_checked. Both change signature, so the old ones are dropped first (with
-- both kept, a call without the new argument would be ambiguous). The batch
-- functions read their arrays with select-list unnests (no function scans), and
-- enqueue_batch sorts its elements with herald._item_shape, which replaces
-- herald._plain_item (dropped here).
-- Release 6's changes over release 5: enqueue validates with fewer expression
-- nodes and instructions (herald._valid tests ranges instead of BETWEEN and each
-- kind's payload rule as one SQL/JSON path; herald._email_address's domain is
-- written so one branch continues at each character, and measures with
-- octet_length); the NOTIFY trigger reads two clocks instead of four: one clock per
-- channel, which herald._listening sets to 0 where it set a separate listen clock
-- (migration 014 drops those), judged by the new herald._notify_clock_due.
-- Release 5's changes over release 4: enqueue costs less per message —
-- herald._email_address is one regular expression (same verdict), herald._nonempty_string
-- takes the object and the key (obj ->> key, no jsonb copy), and herald._store_valid
-- draws the ids first, so its 'accepted' row is the input arrays, written by a plain
-- INSERT instead of aggregated from a data-modifying CTE.
-- Release 4's changes over release 3 (kept here for databases upgrading from it):
-- the log keeps one row per writing statement (migration 009): producers append to
-- herald.log_statements (was herald.log_pending), herald.log_sequence numbers a row by
-- setting its first_offset instead of copying each event into a table, herald.log is
-- a view that expands the rows (sql/functions/log.sql), and log_read and
-- log_dead_letter read through herald._log_after; log_truncate cuts the row that
-- holds its bound.
-- Release 3's changes over release 2:
-- the NOTIFY trigger tests herald._notify_due, an inlined expression, and calls
-- herald._notify only when it is true; enqueue_many without idempotency keys
-- validates and stores in one statement (herald._store_valid), and enqueue_batch's
-- fast path hands its arrays to enqueue_many (herald._plain_item replaces
-- herald._plain_valid); claim_batch's UPDATE finds the locked rows by primary key
-- under any plan; herald._event_detail is STABLE, so it is inlined. Release 2's
-- changes over release 1: the log's events are appended by the functions that make
-- each transition (enqueue, enqueue_batch, enqueue_many, complete, fail, reap_stale,
-- cancel), in the same statement, one row per statement (migration 005), instead
-- of by transition-table triggers; the one remaining trigger only notifies, and
-- notifies only when a listener may be waiting (migration 004).
-- Objects of the earlier code that no longer exist are dropped first.
--
-- Each line pulls in one file of sql/functions or sql/triggers as a tern template, in
-- dependency order (SQL-language functions and views are checked when created, so
-- what they call comes first). The same list is what `herald migrate
-- --reinstall-code` re-applies. Every file is plain SQL (CREATE OR REPLACE), so a DBA
-- can also apply one directly: psql -f sql/functions/claim_batch.sql.
--
-- A later release that changes functions adds a new NNN_code.sql with its own list
-- and empties this one, as this release did to 025_code.sql: a code migration
-- includes the current files, so a kept one would install them before the tables
-- they need exist.
DROP TRIGGER IF EXISTS _100_messages_inserted ON herald.messages;
DROP TRIGGER IF EXISTS _100_log_terminal ON herald.messages;
DROP TRIGGER IF EXISTS _500_notify_ready ON herald.messages;
DROP FUNCTION IF EXISTS herald._messages_inserted();
DROP FUNCTION IF EXISTS herald._log_terminal();
DROP FUNCTION IF EXISTS herald._notify_ready();
DROP FUNCTION IF EXISTS herald._plain_valid(jsonb, text, integer, timestamptz);
DROP FUNCTION IF EXISTS herald._nonempty_string(jsonb);
DROP FUNCTION IF EXISTS herald._email_address(text);
DROP FUNCTION IF EXISTS herald._plain_item(jsonb);
DROP FUNCTION IF EXISTS herald._valid(text, integer, text, jsonb, timestamptz, integer, integer, jsonb, text, text, timestamptz);
DROP FUNCTION IF EXISTS herald._store_valid(text[], text[], jsonb[], jsonb[], integer[], timestamptz[], text[], integer[], timestamptz);
DROP FUNCTION IF EXISTS herald._listening(text);
{{ template "functions/_reject.sql" . }}
{{ template "functions/_nonempty_string.sql" . }}
{{ template "functions/_recipient_pattern.sql" . }}
{{ template "functions/_email_address.sql" . }}
{{ template "functions/_recipient_list_kind.sql" . }}
{{ template "functions/_backoff.sql" . }}
{{ template "functions/_append_error.sql" . }}
{{ template "functions/_key_hash.sql" . }}
{{ template "functions/_event_detail.sql" . }}
{{ template "functions/_log_detail.sql" . }}
{{ template "functions/_check_arrays.sql" . }}
{{ template "functions/_json_text.sql" . }}
{{ template "functions/_json_integer.sql" . }}
{{ template "functions/_json_timestamptz.sql" . }}
{{ template "functions/_validate.sql" . }}
{{ template "functions/_valid.sql" . }}
{{ template "functions/_item_shape.sql" . }}
{{ template "functions/_idempotent_id.sql" . }}
{{ template "functions/_store.sql" . }}
{{ template "functions/_store_valid.sql" . }}
{{ template "functions/_store_batch.sql" . }}
{{ template "functions/_notify_clock_due.sql" . }}
{{ template "functions/_notify_due.sql" . }}
{{ template "functions/_notify.sql" . }}
{{ template "functions/_listening.sql" . }}
{{ template "functions/_consumer_partition.sql" . }}
{{ template "functions/log.sql" . }}
{{ template "functions/_log_after.sql" . }}
{{ template "functions/enqueue.sql" . }}
{{ template "functions/enqueue_batch.sql" . }}
{{ template "functions/enqueue_many.sql" . }}
{{ template "functions/claim_batch.sql" . }}
{{ template "functions/complete.sql" . }}
{{ template "functions/fail.sql" . }}
{{ template "functions/extend_lease.sql" . }}
{{ template "functions/reap_stale.sql" . }}
{{ template "functions/cancel.sql" . }}
{{ template "functions/redrive.sql" . }}
{{ template "functions/purge.sql" . }}
{{ template "functions/status.sql" . }}
{{ template "functions/queue_stats.sql" . }}
{{ template "functions/queue_depth.sql" . }}
{{ template "functions/dead_letters.sql" . }}
{{ template "functions/throughput.sql" . }}
{{ template "functions/log_sequence.sql" . }}
{{ template "functions/refresh_statistics.sql" . }}
{{ template "functions/create_consumer_group.sql" . }}
{{ template "functions/log_read.sql" . }}
{{ template "functions/log_ack.sql" . }}
{{ template "functions/log_dead_letter.sql" . }}
{{ template "functions/log_truncate.sql" . }}
{{ template "functions/consumer_lag.sql" . }}
{{ template "triggers/messages_notify.sql" . }}
