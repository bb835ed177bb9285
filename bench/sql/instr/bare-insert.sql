INSERT INTO public.bare (producer, channel, recipient, payload, run_at, max_attempts, created_at) VALUES ('bench', 'email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}', now(), 5, now());
