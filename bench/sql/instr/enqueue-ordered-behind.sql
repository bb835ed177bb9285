SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}', ordering_key => 'tenant-1');
SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}', ordering_key => 'tenant-1');
