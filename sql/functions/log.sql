-- herald.log — view: the ordered log, one row per event ("offset", message_id, kind,
-- channel, key_hash, at, detail), expanded from the herald.log_statements rows that
-- have their offsets; pending events are not in it. detail is the row's stored JSON,
-- or for 'sent' events stored as typed arrays the same object built from them
-- (herald._log_detail). For ad-hoc reading: it has no index on "offset", so consumers
-- read with herald.log_read. Readable by herald_consumer and herald_admin.
CREATE OR REPLACE VIEW herald.log AS
SELECT s.first_offset + e.pos - 1 AS "offset",
       e.message_id,
       s.kind,
       e.channel,
       e.key_hash,
       s.at,
       herald._log_detail(s.kind, e.detail, e.provider_message_id, e.attempts) AS detail
FROM herald.log_statements s
CROSS JOIN LATERAL unnest(s.message_ids, s.channels, s.key_hashes, s.details, s.provider_message_ids, s.attempts)
  WITH ORDINALITY AS e(message_id, channel, key_hash, detail, provider_message_id, attempts, pos)
WHERE s.first_offset IS NOT NULL;

COMMENT ON VIEW herald.log IS 'Ordered, gapless log of message lifecycle events, one row per event (expanded from herald.log_statements).';
REVOKE ALL ON herald.log FROM PUBLIC;
GRANT SELECT ON herald.log TO herald_consumer, herald_admin;
