WITH r AS (SELECT msg_id FROM pgmq.read('bench', 30, 1000)) SELECT count(*) FROM pgmq.delete('bench', (SELECT array_agg(msg_id) FROM r));
CREATE EXTENSION IF NOT EXISTS pgmq;
SELECT pgmq.create('bench');
SELECT count(*) FROM pgmq.send_batch('bench', ARRAY(SELECT jsonb_build_object('channel', 'email', 'recipient', 'u' || g || '@example.com', 'payload', '{"subject":"Hi","text":"Hello"}'::jsonb) FROM generate_series(1, 200000) g));
VACUUM ANALYZE pgmq.q_bench;
