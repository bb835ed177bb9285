SELECT * FROM herald.record_delivery_events('generic', (SELECT jsonb_agg(jsonb_build_object('event_id', nextval('public.event_ids')::text, 'message_id', g, 'event', 'delivered')) FROM generate_series(1, 100) g));
CREATE SEQUENCE IF NOT EXISTS public.event_ids;
INSERT INTO herald.messages (id, producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at, status, finished_at, attempts) SELECT g, 'bench', 'email', 'a' || g || '@example.com', '{"subject":"Hi","text":"Hello"}', now(), 5, now(), now() + interval '1 day', 'sent', now(), 1 FROM generate_series(1, 100) g;
