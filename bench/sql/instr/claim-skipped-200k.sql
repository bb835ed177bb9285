SELECT count(*) FROM herald.claim_batch('w', 10, NULL, ARRAY['sms']);
INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at) SELECT 'bench', 'email', 'u' || g || '@example.com', '{"subject":"Hi","text":"Hello"}', now() - interval '1 hour', 5, now(), now() + interval '5 days' FROM generate_series(1, 200000) g;
INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at) SELECT 'bench', 'sms', '+1415555' || lpad(g::text, 4, '0'), '{"text":"Hello"}', now(), 5, now(), now() + interval '5 days' FROM generate_series(1, 1000) g;
ANALYZE herald.messages;
