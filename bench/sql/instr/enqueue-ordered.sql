SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}', ordering_key => md5(clock_timestamp()::text));
