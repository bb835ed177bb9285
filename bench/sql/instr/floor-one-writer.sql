SELECT public.floor_one_writer('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}');
