-- herald._callback_names() — the names status callbacks go by: the consumer group of
-- herald.log that herald.dispatch_callbacks reads ("group", reserved: names starting
-- with herald. are refused to consumers), and the producer that owns the callback
-- messages it enqueues (producer: no role or intake token is named so, so callbacks
-- count against no producer's limits and are never themselves called back).
-- A constant, inlined into its callers. Locks: none.
CREATE OR REPLACE FUNCTION herald._callback_names(OUT "group" text, OUT producer text)
LANGUAGE sql
IMMUTABLE
AS $$
  SELECT 'herald.callbacks', 'herald:callbacks'
$$;
REVOKE ALL ON FUNCTION herald._callback_names() FROM PUBLIC;
COMMENT ON FUNCTION herald._callback_names() IS
  'Private: the consumer group and the producer name of status callbacks.';
