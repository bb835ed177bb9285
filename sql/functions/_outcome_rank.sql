-- herald._outcome_rank(outcome, outcome_type) — how grave a delivery outcome is, so
-- that a later, lesser event does not hide a graver one: deferred and a soft bounce 1,
-- delivered 2, undelivered and a hard bounce 3, complained and unsubscribed 4 (NULL:
-- 0). IMMUTABLE SQL, inlined. Locks: none.
CREATE OR REPLACE FUNCTION herald._outcome_rank(outcome text, outcome_type text)
RETURNS integer
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT CASE
           WHEN outcome IN ('complained', 'unsubscribed') THEN 4
           WHEN outcome = 'undelivered' OR (outcome = 'bounced' AND outcome_type = 'hard') THEN 3
           WHEN outcome = 'delivered' THEN 2
           WHEN outcome IN ('deferred', 'bounced') THEN 1
           ELSE 0
         END
$$;

REVOKE ALL ON FUNCTION herald._outcome_rank(text, text) FROM PUBLIC;
COMMENT ON FUNCTION herald._outcome_rank(text, text) IS 'Private: how grave a delivery outcome is (inlined).';
