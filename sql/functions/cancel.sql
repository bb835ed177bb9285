-- herald.cancel(id, now) — cancel a message still 'queued' or 'held'; returns true when
-- it was cancelled, false when it is unknown or in any other state (a message being
-- sent, or already finished, cannot be cancelled).
-- A cancelled message gets a 'cancelled' log event in the same statement.
-- Index: the primary key. Locks: the row; ROW EXCLUSIVE on herald.log_statements.
-- Admin only (herald_admin).
CREATE OR REPLACE FUNCTION herald.cancel(id bigint, now timestamptz DEFAULT now())
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  clock_ok boolean := herald._check_clock(now => cancel.now); -- first: a forged clock changes nothing
  done boolean;
  ordered boolean;
BEGIN
  IF cancel.id IS NULL THEN
    PERFORM herald._reject(code => '22V12', field => 'id', message => 'must not be NULL');
  END IF;
  WITH cancelled AS (
    UPDATE herald.messages m
    SET status = 'cancelled', finished_at = cancel.now
    WHERE m.id = cancel.id AND m.status IN ('queued', 'held')
    RETURNING m.id, m.channel, m.recipient, m.ordering_key
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
    SELECT 'cancelled', cancel.now, ARRAY[c.id], ARRAY[c.channel], ARRAY[herald._key_hash(c.ordering_key, c.recipient)]
    FROM cancelled c
  )
  SELECT count(*) > 0, bool_or(c.ordering_key IS NOT NULL) INTO done, ordered FROM cancelled c;
  IF ordered THEN
    PERFORM herald._release_after(ids => ARRAY[cancel.id]);
  END IF;
  IF done THEN
    PERFORM herald._notify(ARRAY['herald_log']);
  END IF;
  RETURN done;
END
$$;

REVOKE ALL ON FUNCTION herald.cancel(bigint, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.cancel(bigint, timestamptz) TO herald_admin;
COMMENT ON FUNCTION herald.cancel(bigint, timestamptz) IS
  'Cancel a message that is still queued or held; false when unknown or in another state.';
