-- events-stored-200k.sql — for bench/instructions.sh -f: 200,000 delivery events
-- already stored and analyzed, as in a deployment that has run for a while (the
-- events-*.sql scripts otherwise start from an empty herald.delivery_events).
INSERT INTO herald.delivery_events (source, event_id, message_id, event, at, received_at)
SELECT 'sendgrid', 'old-' || g, NULL, 'delivered', now(), now() FROM generate_series(1, 200000) g;
VACUUM ANALYZE herald.delivery_events;
