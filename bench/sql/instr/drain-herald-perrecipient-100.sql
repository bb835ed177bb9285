WITH c AS (SELECT id, lease_token FROM herald.claim_batch('bench', 100)) SELECT herald.complete(array_agg(id), array_agg(lease_token)) FROM c;
UPDATE herald.channels SET quiet_from = (now() AT TIME ZONE 'UTC' + interval '6 hours')::time, quiet_until = (now() AT TIME ZONE 'UTC' + interval '7 hours')::time, quiet_per_recipient = true WHERE name = 'email';
SELECT count(herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email', 'recipient', 'u' || g || '@example.com', 'payload', '{"subject":"Hi","text":"Hello"}'::jsonb)) FROM generate_series(1, 1000) g))) FROM generate_series(1, 20);
SELECT herald.log_sequence(100000);
SELECT herald.log_sequence(100000);
SET default_statistics_target = 1000;
VACUUM ANALYZE herald.messages;
