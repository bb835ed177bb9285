INSERT INTO public.bare (channel, recipient, payload, run_at, max_attempts, created_at) VALUES ('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}', now(), 5, now());
