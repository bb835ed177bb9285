SELECT herald.enqueue_batch(a.js) FROM public.args a;
