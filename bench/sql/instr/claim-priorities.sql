SELECT count(*) FROM herald.claim_batch('w', 100);
INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, priority, max_attempts, created_at, expires_at) SELECT 'bench', 'email', 'u' || g || '@example.com', '{"subject":"Hi","text":"Hello"}', '2100-01-01 00:00:00+00', g, 5, '2026-01-01 00:00:00+00', 'infinity' FROM generate_series(-100, 100) g;
