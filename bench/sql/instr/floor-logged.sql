SELECT public.floor_logged('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}');
