SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}');
UPDATE herald.channels SET quiet_from = '21:00', quiet_until = '08:00', quiet_per_recipient = true WHERE name = 'email';
