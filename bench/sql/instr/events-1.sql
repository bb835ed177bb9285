SELECT * FROM herald.record_delivery_events('generic', jsonb_build_array(jsonb_build_object('event_id', nextval('public.event_ids')::text, 'message_id', 1, 'event', 'delivered')));
CREATE SEQUENCE IF NOT EXISTS public.event_ids;
INSERT INTO herald.messages (id, producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at, status, finished_at, attempts) VALUES (1, 'bench', 'email', 'a@example.com', '{"subject":"Hi","text":"Hello"}', now(), 5, now(), now() + interval '1 day', 'sent', now(), 1);
