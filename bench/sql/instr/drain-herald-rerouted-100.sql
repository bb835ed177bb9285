WITH c AS (SELECT id, lease_token FROM herald.claim_batch('bench', 100, channels => ARRAY['backup'])) SELECT herald.complete(array_agg(id), array_agg(lease_token)) FROM c;
INSERT INTO herald.channels (name, kind) VALUES ('backup', 'email') ON CONFLICT DO NOTHING;
UPDATE herald.channels SET fallback = 'backup' WHERE name = 'email';
SELECT herald.pause_channel('email', 'bench: its provider is down', by => 'runner');
SELECT count(herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email', 'recipient', 'u' || g || '@example.com', 'payload', '{"subject":"Hi","text":"Hello"}'::jsonb)) FROM generate_series(1, 1000) g))) FROM generate_series(1, 200);
SELECT herald.log_sequence(100000);
SELECT herald.log_sequence(100000);
SET default_statistics_target = 1000;
VACUUM ANALYZE herald.messages;
