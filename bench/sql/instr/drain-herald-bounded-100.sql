WITH c AS (SELECT id, lease_token FROM herald.claim_batch('bench', 100, channels => '{email}')) SELECT herald.complete(array_agg(id), array_agg(lease_token)) FROM c;
SELECT count(herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email', 'recipient', 'u' || g || '@example.com', 'payload', '{"subject":"Hi","text":"Hello"}'::jsonb)) FROM generate_series(1, 1000) g))) FROM generate_series(1, 200);
SELECT count(herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'sms', 'recipient', '+1415555' || lpad(g::text, 4, '0'), 'payload', '{"text":"Hello"}'::jsonb)) FROM generate_series(1, 500) g)));
SELECT count(*) FROM herald.claim_batch('held', 500, '1 day', '{sms}');
UPDATE herald.channels SET producer_concurrency = 1000 WHERE name = 'email';
SELECT herald.log_sequence(100000);
SELECT herald.log_sequence(100000);
SET default_statistics_target = 1000;
VACUUM ANALYZE herald.messages;
