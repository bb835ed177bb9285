-- herald.pause_channel(channel, reason, by, until, now) — stop handing out a channel's
-- messages (claim_batch skips it; enqueue still stores them). Returns true when this
-- call paused it, false when it was paused already (an operator's pause is kept over
-- a runner's; an operator's call takes over a runner's pause and its reason).
--   by 'operator'  only an operator's herald.resume_channel ends it (herald_admin)
--   by 'runner'    the configuration is wrong (credentials, TLS, sender identity) or
--                  the quota spent (until); a probe that passes may end it, not before
--                  until, nor, for a relapse (within backoff_max of a runner's resume:
--                  a fault the probe does not see), before least(backoff_max,
--                  backoff_base * 2^relapses) has passed (herald_worker)
-- reason: for operators (first 500 characters; herald.channels, the console, /metrics).
-- Errors: 22V12 channel, reason or by NULL, by not one of the two, until not after
-- now or given by 'operator'; 22V01 channel unknown; 42501 by 'operator' from a role
-- below herald_admin. Index: channels_pkey. Locks: the channel row. SECURITY DEFINER.
CREATE OR REPLACE FUNCTION herald.pause_channel(
  channel text,
  reason text,
  by text DEFAULT 'operator',
  until timestamptz DEFAULT NULL,
  now timestamptz DEFAULT now()
) RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  clock_ok boolean := herald._check_clock(now => pause_channel.now); -- first: a forged clock changes nothing
  changed boolean;
BEGIN
  PERFORM herald._check_not_null(ARRAY['channel', 'reason', 'by'],
    ARRAY[pause_channel.channel IS NOT NULL, pause_channel.reason IS NOT NULL, pause_channel.by IS NOT NULL]);
  PERFORM herald._check_pauser(by => pause_channel.by);
  IF pause_channel.until <= pause_channel.now OR (pause_channel.until IS NOT NULL AND pause_channel.by = 'operator') THEN
    PERFORM herald._reject(code => '22V12', field => 'until',
      message => 'must be after now, for a runner''s pause (an operator''s lasts until an operator resumes)');
  END IF;
  IF NOT EXISTS (SELECT FROM herald.channels c WHERE c.name = pause_channel.channel) THEN
    PERFORM herald._reject(code => '22V01', field => 'channel', message => format('unknown channel %L', pause_channel.channel));
  END IF;
  UPDATE herald.channels c
  SET paused = true, paused_reason = left(pause_channel.reason, 500), paused_at = pause_channel.now,
      paused_by = pause_channel.by,
      pause_relapses = r.relapses,
      paused_until = coalesce(pause_channel.until, CASE WHEN r.relapses > 0
        THEN pause_channel.now + least(c.backoff_max, c.backoff_base * power(2, least(r.relapses, 30))) END)
  FROM (SELECT CASE WHEN pause_channel.by = 'runner' AND pause_channel.until IS NULL
                         AND x.resumed_at > pause_channel.now - x.backoff_max THEN x.pause_relapses + 1
                    ELSE 0 END AS relapses
        FROM herald.channels x WHERE x.name = pause_channel.channel) AS r
  WHERE c.name = pause_channel.channel
    AND (NOT c.paused OR (c.paused_by IS DISTINCT FROM 'operator' AND pause_channel.by = 'operator'))
  RETURNING true INTO changed;
  RETURN coalesce(changed, false);
END
$$;

REVOKE ALL ON FUNCTION herald.pause_channel(text, text, text, timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.pause_channel(text, text, text, timestamptz, timestamptz) TO herald_worker, herald_admin;
COMMENT ON FUNCTION herald.pause_channel(text, text, text, timestamptz, timestamptz) IS
  'Stop handing out a channel''s messages, with a reason; by operator (resumed by an operator) or runner (a probe may resume, not before until).';
