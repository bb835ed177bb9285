SELECT herald.enqueue_many(a.ch, a.rc, a.pl) FROM public.args a;
