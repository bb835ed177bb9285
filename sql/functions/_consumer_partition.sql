-- herald._consumer_partition("group", partition, skip_locked) — lock the
-- (group, partition) row of herald.consumer_offsets for the caller's transaction and
-- return (partitions of the group, committed_offset). With skip_locked, a row held by
-- another transaction (another consumer of the group on this partition) gives
-- committed_offset NULL instead of waiting.
-- Errors: 22V12 group (herald._check_group), 22V13 group (unknown consumer group), 22V14 partition (outside
-- 0..partitions-1). Locks: the offset row, FOR UPDATE.
CREATE OR REPLACE FUNCTION herald._consumer_partition(
  "group" text,
  partition integer,
  skip_locked boolean,
  OUT partitions integer,
  OUT committed_offset bigint
)
LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM herald._check_group("group");
  SELECT g.partitions INTO partitions FROM herald.consumer_groups g WHERE g.name = "group";
  IF NOT FOUND THEN
    PERFORM herald._reject('22V13', 'group', format('unknown consumer group %L', "group"),
      hint => 'create it with herald.create_consumer_group');
  END IF;
  IF partition IS NULL OR partition NOT BETWEEN 0 AND partitions - 1 THEN
    PERFORM herald._reject('22V14', 'partition',
      format('%s is outside 0..%s for group %L', coalesce(partition::text, 'NULL'), partitions - 1, "group"));
  END IF;
  IF skip_locked THEN
    SELECT o.committed_offset INTO committed_offset FROM herald.consumer_offsets o
    WHERE o.group_name = "group" AND o.partition = _consumer_partition.partition
    FOR UPDATE SKIP LOCKED;
  ELSE
    SELECT o.committed_offset INTO committed_offset FROM herald.consumer_offsets o
    WHERE o.group_name = "group" AND o.partition = _consumer_partition.partition
    FOR UPDATE;
  END IF;
END
$$;

REVOKE ALL ON FUNCTION herald._consumer_partition(text, integer, boolean) FROM PUBLIC;
COMMENT ON FUNCTION herald._consumer_partition(text, integer, boolean) IS
  'Private: check a consumer group and partition, optionally locking its offset row.';
