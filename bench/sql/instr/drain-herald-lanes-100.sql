WITH c AS (SELECT id, lease_token FROM herald.claim_batch('bench', 100)) SELECT herald.complete(array_agg(id), array_agg(lease_token)) FROM c;
INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at) SELECT 'p' || (g % 32), 'email', 'u' || g || '@example.com', '{"subject":"Hi","text":"Hello"}', '2026-01-01 00:00:00+00'::timestamptz + g * interval '1 ms', 5, '2026-01-01 00:00:00+00', 'infinity' FROM generate_series(1, 20000) g;
SET default_statistics_target = 1000;
VACUUM ANALYZE herald.messages;
