SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}', idempotency_key => md5(clock_timestamp()::text));
