INSERT INTO public.bare (channel, recipient, payload, run_at, max_attempts, created_at) SELECT u.c, u.r, u.p, now(), 5, now() FROM public.args a, unnest(a.ch, a.rc, a.pl) AS u(c, r, p);
