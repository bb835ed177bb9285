-- herald.resume_channel(channel, by, now) — hand out a paused channel's messages
-- again; returns true when this call resumed it.
--   by 'operator'  ends any pause (herald_admin)
--   by 'runner'    ends only a runner's pause (a probe of the provider succeeded),
--                  from its paused_until on (a spent quota, a relapse); an
--                  operator's pause stays (herald_worker); notes resumed_at
-- Wakes the runners (NOTIFY herald_queue) when it resumed the channel.
-- Errors: 22V12 channel or by NULL, by not one of the two; 22V01 channel unknown;
-- 42501 by 'operator' from a role below herald_admin, now from one below it.
-- Index: channels_pkey. Locks: the channel row. SECURITY DEFINER for herald_worker.
CREATE OR REPLACE FUNCTION herald.resume_channel(channel text, by text DEFAULT 'operator', now timestamptz DEFAULT now())
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  clock_ok boolean := herald._check_clock(now => resume_channel.now); -- first: a forged clock changes nothing
  changed boolean;
BEGIN
  PERFORM herald._check_not_null(ARRAY['channel', 'by'],
    ARRAY[resume_channel.channel IS NOT NULL, resume_channel.by IS NOT NULL]);
  PERFORM herald._check_pauser(by => resume_channel.by);
  IF NOT EXISTS (SELECT FROM herald.channels c WHERE c.name = resume_channel.channel) THEN
    PERFORM herald._reject(code => '22V01', field => 'channel', message => format('unknown channel %L', resume_channel.channel));
  END IF;
  UPDATE herald.channels c
  SET paused = false, paused_reason = NULL, paused_at = NULL, paused_by = NULL, paused_until = NULL,
      resumed_at = CASE WHEN resume_channel.by = 'runner' THEN resume_channel.now END,
      pause_relapses = CASE WHEN resume_channel.by = 'runner' THEN c.pause_relapses ELSE 0 END
  WHERE c.name = resume_channel.channel AND c.paused
    AND (resume_channel.by = 'operator'
         OR (c.paused_by IS DISTINCT FROM 'operator' AND NOT coalesce(c.paused_until > resume_channel.now, false)))
  RETURNING true INTO changed;
  IF changed THEN
    PERFORM herald._notify(ARRAY['herald_queue']);
  END IF;
  RETURN coalesce(changed, false);
END
$$;

REVOKE ALL ON FUNCTION herald.resume_channel(text, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.resume_channel(text, text, timestamptz) TO herald_worker, herald_admin;
COMMENT ON FUNCTION herald.resume_channel(text, text, timestamptz) IS
  'Hand out a paused channel''s messages again: any pause (operator) or only a runner''s, from its paused_until on (a probe).';
