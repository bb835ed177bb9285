SELECT herald.log_ack('g', 0, (SELECT max("offset") FROM herald.log_read('g', 0, 100)));
SELECT herald.create_consumer_group('g', 1, 'latest') WHERE NOT EXISTS (SELECT FROM herald.consumer_groups WHERE name = 'g');
SELECT count(*) FROM generate_series(1, 100) AS b, LATERAL herald.enqueue_many(array_fill('email'::text, ARRAY[100]), ARRAY(SELECT 'u' || b || '-' || g || '@example.com' FROM generate_series(1, 100) g), array_fill('{"subject":"Hi","text":"Hello"}'::jsonb, ARRAY[100]));
SELECT herald.log_sequence(10000);
