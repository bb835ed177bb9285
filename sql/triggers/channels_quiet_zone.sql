-- Trigger channels_quiet_zone on herald.channels. herald._channels_quiet_zone_check()
-- (BEFORE INSERT OR UPDATE OF quiet_zone, FOR EACH ROW): quiet_zone must name a time
-- zone of PostgreSQL's IANA database as herald._time_zone reads names, the rule a
-- message's recipient_zone follows: a POSIX specification ('UTC+3' is three hours
-- west of UTC), an abbreviation or an unknown name would keep the quiet hours at the
-- wrong time. Errors: 22V19 quiet_zone. SECURITY DEFINER: it calls private functions
-- for an admin's statement. Locks: none beyond the row's.
CREATE OR REPLACE FUNCTION herald._channels_quiet_zone_check()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF NOT herald._time_zone(name => NEW.quiet_zone) THEN
    PERFORM herald._reject(code => '22V19', field => 'quiet_zone',
      message => format('%L is not the name of a time zone', NEW.quiet_zone),
      hint => 'an IANA name such as America/New_York or Europe/Berlin (the names of pg_timezone_names), or UTC');
  END IF;
  RETURN NEW;
END
$$;

REVOKE ALL ON FUNCTION herald._channels_quiet_zone_check() FROM PUBLIC;
COMMENT ON FUNCTION herald._channels_quiet_zone_check() IS
  'Private: the function of trigger channels_quiet_zone.';

CREATE OR REPLACE TRIGGER channels_quiet_zone
  BEFORE INSERT OR UPDATE OF quiet_zone ON herald.channels
  FOR EACH ROW
  EXECUTE FUNCTION herald._channels_quiet_zone_check();
COMMENT ON TRIGGER channels_quiet_zone ON herald.channels IS
  'Refuses a quiet_zone that is not an IANA time zone name PostgreSQL has (22V19).';
