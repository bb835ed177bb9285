-- herald._backoff(attempt, base, cap) — delay before retry number `attempt` (1-based).
--
-- Exponential with "equal jitter": d = least(cap, base * 2^(attempt-1)), and the
-- result is uniformly spread over [d/2, d]. The jitter keeps a burst of failures
-- (a provider outage) from retrying in lock step; the floor of d/2 keeps the growth.
-- Volatile (random()); one expression, so it is inlined into fail. Locks: none.
CREATE OR REPLACE FUNCTION herald._backoff(attempt integer, base interval, cap interval)
RETURNS interval
LANGUAGE sql
VOLATILE
AS $$
  SELECT least(cap, base * power(2, least(greatest(attempt, 1) - 1, 30))) * (0.5 + random() * 0.5)
$$;

REVOKE ALL ON FUNCTION herald._backoff(integer, interval, interval) FROM PUBLIC;
COMMENT ON FUNCTION herald._backoff(integer, interval, interval) IS
  'Private: exponential backoff with equal jitter for a retry attempt.';
