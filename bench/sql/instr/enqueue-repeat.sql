SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}', idempotency_key => 'the-same-key');
