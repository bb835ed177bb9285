SELECT herald.enqueue_many(a.ch, a.rc, a.pl, idempotency_keys => ARRAY(SELECT md5(clock_timestamp()::text || g) FROM generate_series(1,100) g)) FROM public.args a;
