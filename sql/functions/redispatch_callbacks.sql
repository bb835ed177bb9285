-- herald.redispatch_callbacks(now) — send the status callbacks herald.dispatch_callbacks
-- set aside (herald.consumer_dead_letters of the callbacks' group), once an admin has
-- fixed what refused them: each event whose message is still stored and whose producer
-- still wants it (herald._callback_spec) is enqueued as dispatch would, and its dead
-- letter deleted, all or nothing. Events of purged messages, or of producers without a
-- callback_url now, stay (delete them by hand). Returns the callbacks enqueued.
-- Errors: those of herald._enqueue when a callback is refused again (nothing changes;
-- the error names the field of the first refused one); 42501 now. Locks: the dead
-- letters, FOR UPDATE; those of herald._enqueue. Admin only (herald_admin).
CREATE OR REPLACE FUNCTION herald.redispatch_callbacks(now timestamptz DEFAULT now())
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => redispatch_callbacks.now); -- first: a forged clock changes nothing
  v_group text := (herald._callback_names())."group";
  v_offsets bigint[];
  v_specs herald.message_spec[];
BEGIN
  SELECT array_agg(c."offset" ORDER BY c."offset"), array_agg(c.spec ORDER BY c."offset")
  INTO v_offsets, v_specs
  FROM (SELECT d."offset", herald._callback_spec(p => p, m => m, kind => d.kind, "offset" => d."offset", at => d.at) AS spec
        FROM herald.consumer_dead_letters d
        JOIN herald.messages m ON m.id = d.message_id
        JOIN herald.producers p ON p.producer = m.producer
        WHERE d.group_name = v_group
        FOR UPDATE OF d) AS c
  WHERE c.spec IS DISTINCT FROM NULL; -- (IS NOT NULL of a row asks that every field be set)
  IF v_specs IS NULL THEN
    RETURN 0;
  END IF;
  PERFORM herald._check_callback_channel(channel => c.channel) FROM (SELECT DISTINCT s.channel FROM unnest(v_specs) AS s) AS c;
  PERFORM herald._enqueue(specs => v_specs, now => redispatch_callbacks.now, single => false,
                          as_producer => (herald._callback_names()).producer);
  DELETE FROM herald.consumer_dead_letters d WHERE d.group_name = v_group AND d."offset" = ANY (v_offsets);
  RETURN cardinality(v_specs);
END
$$;

REVOKE ALL ON FUNCTION herald.redispatch_callbacks(timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.redispatch_callbacks(timestamptz) TO herald_admin;
COMMENT ON FUNCTION herald.redispatch_callbacks(timestamptz) IS
  'Send the status callbacks that dispatch_callbacks set aside, once what refused them is fixed.';
