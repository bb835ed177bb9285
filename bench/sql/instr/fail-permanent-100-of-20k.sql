WITH c AS (SELECT id, lease_token FROM herald.claim_batch('bench', 100)) SELECT herald.fail(array_agg(id), array_agg(lease_token), array_fill('rejected: spam'::text, ARRAY[count(*)::integer]), array_fill('permanent'::text, ARRAY[count(*)::integer]), error_codes => array_fill('554 5.7.1'::text, ARRAY[count(*)::integer])) FROM c;
SELECT count(herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email', 'recipient', 'u' || g || '@example.com', 'payload', '{"subject":"Hi","text":"Hello"}'::jsonb)) FROM generate_series(1, 1000) g))) FROM generate_series(1, 20);
SELECT herald.log_sequence(100000);
SELECT herald.log_sequence(100000);
SET default_statistics_target = 1000;
VACUUM ANALYZE herald.messages;
