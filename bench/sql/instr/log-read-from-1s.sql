SELECT herald.log_ack('g', 0, (SELECT max("offset") FROM herald.log_read('g', 0, 100)));
SELECT herald.create_consumer_group('g', 1, 'latest') WHERE NOT EXISTS (SELECT FROM herald.consumer_groups WHERE name = 'g');
SELECT count(herald.enqueue('email', 'u' || g || '@example.com', '{"subject":"Hi","text":"Hello"}')) FROM generate_series(1, 4000) g;
SELECT herald.log_sequence(10000);
