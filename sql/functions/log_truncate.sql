-- herald.log_truncate(before_offset) — retention for herald.log: delete events with
-- an offset below `before_offset`, but never one that some consumer group has not
-- acknowledged (the bound is lowered to one past the smallest committed offset of
-- any group and partition). Returns how many were deleted.
-- Index: log_pkey. Locks: the deleted rows. Errors: HR012 before_offset (NULL).
-- Admin only (herald_admin).
CREATE OR REPLACE FUNCTION herald.log_truncate(before_offset bigint)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  bound bigint;
  deleted bigint;
BEGIN
  IF before_offset IS NULL THEN
    PERFORM herald._reject('HR012', 'before_offset', 'must not be NULL');
  END IF;
  SELECT least(before_offset, min(o.committed_offset) + 1) INTO bound FROM herald.consumer_offsets o;
  bound := coalesce(bound, before_offset);
  DELETE FROM herald.log l WHERE l."offset" < bound;
  GET DIAGNOSTICS deleted = ROW_COUNT;
  RETURN deleted;
END
$$;

REVOKE ALL ON FUNCTION herald.log_truncate(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.log_truncate(bigint) TO herald_admin;
