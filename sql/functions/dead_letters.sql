-- herald.dead_letters — view: messages that will not be sent again unless redriven
-- (herald.redrive), newest first, with why they died and their error history.
-- Index: messages_dead_idx (finished_at, id) WHERE status = 'dead', read backwards.
-- Readable by herald_admin.
CREATE OR REPLACE VIEW herald.dead_letters AS
SELECT m.id, m.channel, m.recipient, m.attempts, m.max_attempts, m.last_error,
       m.last_error_class, m.errors, m.created_at, m.finished_at AS died_at, m.metadata,
       m.producer, m.last_error_code
FROM herald.messages m
WHERE m.status = 'dead'
ORDER BY m.finished_at DESC, m.id DESC;

COMMENT ON VIEW herald.dead_letters IS 'Dead messages (permanent failure or attempts exhausted), newest first.';
REVOKE ALL ON herald.dead_letters FROM PUBLIC;
GRANT SELECT ON herald.dead_letters TO herald_admin;
