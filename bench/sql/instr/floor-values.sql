SELECT public.floor_values('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}');
