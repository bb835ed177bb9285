SELECT array_agg(msg_id) AS ids FROM pgmq.read('bench', 30, 1000) \gset
SELECT count(*) FROM pgmq.archive('bench', ':ids'::bigint[]);
