-- Triggers producers_callbacks and producers_callbacks_group on herald.producers.
-- herald._producers_callback_check() (BEFORE INSERT OR UPDATE OF the callback columns,
-- FOR EACH ROW): a callback_url must be one herald._enqueue would take on
-- callback_channel, a webhook channel, from the callbacks' producer
-- (herald._callback_names), and callback_events kinds of herald._log_kinds. Errors:
-- 22V01 callback_channel (unknown, not webhook), 42501 callback_channel (not open to
-- the callbacks' producer alone: herald._check_callback_channel), 22V02 / 42501 callback_url (herald._validate's recipient
-- rules, with egress), 22V12 callback_events, callback_channel (missing), callback_url
-- (on the callbacks' own producer). herald._callbacks_group() (AFTER, FOR EACH STATEMENT): while some
-- producer has a callback_url the consumer group herald.dispatch_callbacks reads
-- exists, created at the log's end; with none it is deleted unless it holds dead
-- letters. SECURITY DEFINER: they call private functions for an admin's statement.
-- Locks: the producer row; consumer_groups and consumer_offsets rows.
CREATE OR REPLACE FUNCTION herald._producers_callback_check()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_kind text;
  v_policy herald.producers;
  v_state text;
  v_column text;
  v_message text;
  v_hint text;
BEGIN
  IF NEW.callback_url IS NULL THEN
    RETURN NEW; -- the constraint producers_callback_whole covers a half-set pair
  END IF;
  IF NEW.callback_channel IS NULL THEN
    PERFORM herald._reject(code => '22V12', field => 'callback_channel', message => 'must be set with callback_url');
  END IF;
  v_policy.producer := (herald._callback_names()).producer;
  IF NEW.producer = v_policy.producer THEN
    PERFORM herald._reject(code => '22V12', field => 'callback_url',
      message => format('%L owns the callbacks and is never called back', NEW.producer));
  END IF;
  IF cardinality(NEW.callback_events) = 0 OR NOT NEW.callback_events <@ herald._log_kinds() THEN
    PERFORM herald._reject(code => '22V12', field => 'callback_events',
      message => format('%s is not a non-empty list of log events', NEW.callback_events),
      hint => 'events are ' || array_to_string(herald._log_kinds(), ', '));
  END IF;
  SELECT c.kind INTO v_kind FROM herald.channels c WHERE c.name = NEW.callback_channel;
  IF v_kind <> 'webhook' THEN
    PERFORM herald._reject(code => '22V01', field => 'callback_channel',
      message => format('channel %L is of kind %s: callbacks go out on a webhook channel', NEW.callback_channel, v_kind));
  END IF;
  BEGIN
    PERFORM herald._validate(spec => jsonb_populate_record(NULL::herald.message_spec,
                               jsonb_build_object('channel', NEW.callback_channel, 'recipient', NEW.callback_url, 'payload', '{}'::jsonb)),
                             policy => v_policy, now => now(), field_prefix => '');
  EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_column = COLUMN_NAME, v_message = MESSAGE_TEXT,
                            v_hint = PG_EXCEPTION_HINT;
    IF v_column NOT IN ('channel', 'recipient') THEN
      RAISE;
    END IF;
    PERFORM herald._reject(code => v_state, field => CASE v_column WHEN 'channel' THEN 'callback_channel' ELSE 'callback_url' END,
                           message => substr(v_message, length(v_column) + 3), hint => nullif(v_hint, ''));
  END;
  PERFORM herald._check_callback_channel(channel => NEW.callback_channel);
  RETURN NEW;
END
$$;

REVOKE ALL ON FUNCTION herald._producers_callback_check() FROM PUBLIC;
COMMENT ON FUNCTION herald._producers_callback_check() IS
  'Private: the function of trigger producers_callbacks.';

CREATE OR REPLACE FUNCTION herald._callbacks_group()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_group text := (herald._callback_names())."group";
BEGIN
  IF EXISTS (SELECT FROM herald.producers p WHERE p.callback_url IS NOT NULL) THEN
    INSERT INTO herald.consumer_groups (name, partitions, created_at)
    VALUES (v_group, 1, now())
    ON CONFLICT (name) DO NOTHING;
    IF FOUND THEN
      INSERT INTO herald.consumer_offsets (group_name, partition, committed_offset, updated_at)
      SELECT v_group, 0, c.next_offset - 1, now() FROM herald.log_counter c;
    END IF;
  ELSE
    DELETE FROM herald.consumer_groups g
    WHERE g.name = v_group
      AND NOT EXISTS (SELECT FROM herald.consumer_dead_letters d WHERE d.group_name = v_group);
  END IF;
  RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION herald._callbacks_group() FROM PUBLIC;
COMMENT ON FUNCTION herald._callbacks_group() IS
  'Private: the function of trigger producers_callbacks_group.';

CREATE OR REPLACE TRIGGER producers_callbacks
  BEFORE INSERT OR UPDATE OF callback_url, callback_channel, callback_events ON herald.producers
  FOR EACH ROW
  EXECUTE FUNCTION herald._producers_callback_check();
COMMENT ON TRIGGER producers_callbacks ON herald.producers IS
  'Refuses a callback_url, callback_channel or callback_events a status callback could not be enqueued with.';

CREATE OR REPLACE TRIGGER producers_callbacks_group
  AFTER INSERT OR UPDATE OF callback_url OR DELETE ON herald.producers
  FOR EACH STATEMENT
  EXECUTE FUNCTION herald._callbacks_group();
COMMENT ON TRIGGER producers_callbacks_group ON herald.producers IS
  'Keeps the consumer group of herald.dispatch_callbacks while a producer has a callback_url.';
