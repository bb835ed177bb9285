SELECT herald.log_ack('g', 0, (SELECT max("offset") FROM herald.log_read('g', 0, 100)));
SELECT herald.create_consumer_group('g', 1, 'latest') WHERE NOT EXISTS (SELECT FROM herald.consumer_groups WHERE name = 'g');
SELECT count(*) FROM herald.enqueue_many(array_fill('email'::text, ARRAY[10000]), ARRAY(SELECT 'u' || g || '@example.com' FROM generate_series(1, 10000) g), array_fill('{"subject":"Hi","text":"Hello"}'::jsonb, ARRAY[10000]));
SELECT herald.log_sequence(10000);
