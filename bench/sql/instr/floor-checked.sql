SELECT public.floor_checked('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}');
