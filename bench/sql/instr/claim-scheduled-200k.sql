SELECT count(*) FROM herald.claim_batch('w', 100);
INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at) SELECT 'bench', 'email', 'u' || g || '@example.com', '{"subject":"Hi","text":"Hello"}', now() + interval '1 day' + g * interval '1 ms', 5, now(), now() + interval '5 days' FROM generate_series(1, 200000) g;
ANALYZE herald.messages;
