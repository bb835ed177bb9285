-- herald._log_kinds() — the kinds of event the ordered log holds, in lifecycle order:
-- the pipeline's (accepted, rerouted, sent, dead, cancelled, expired, suppressed) and the
-- providers' receipts (delivered, deferred, bounced, complained, unsubscribed,
-- undelivered). herald.log_sequence refuses a row of another kind; the trigger
-- producers_callbacks checks herald.producers.callback_events against it. A constant,
-- inlined into its callers. Locks: none.
CREATE OR REPLACE FUNCTION herald._log_kinds()
RETURNS text[]
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT '{accepted,rerouted,sent,dead,cancelled,expired,suppressed,delivered,deferred,bounced,complained,unsubscribed,undelivered}'::text[]
$$;
REVOKE ALL ON FUNCTION herald._log_kinds() FROM PUBLIC;
COMMENT ON FUNCTION herald._log_kinds() IS 'Private: the kinds of event in the ordered log.';
