SELECT count(*) FROM herald.claim_batch('w', 100);
SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}', ordering_key => 'tenant-1');
SELECT count(*) FROM herald.claim_batch('w', 1);
SELECT count(herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email', 'recipient', 'u' || g || '@example.com', 'payload', '{"subject":"Hi","text":"Hello"}'::jsonb, 'ordering_key', 'tenant-1')) FROM generate_series(1, 10000) g))) FROM generate_series(1, 10);
SELECT count(herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email', 'recipient', 'v' || g || '@example.com', 'payload', '{"subject":"Hi","text":"Hello"}'::jsonb)) FROM generate_series(1, 5000) g)));
VACUUM ANALYZE herald.messages;
