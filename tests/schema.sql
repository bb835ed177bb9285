--
-- PostgreSQL database dump
--



SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: herald; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA herald;


--
-- Name: SCHEMA herald; Type: COMMENT; Schema: -; Owner: -
--

COMMENT ON SCHEMA herald IS 'herald: Postgres-native notification queue. Public API: objects without a leading underscore.';


--
-- Name: message_spec; Type: TYPE; Schema: herald; Owner: -
--

CREATE TYPE herald.message_spec AS (
	channel text,
	recipient text,
	payload jsonb,
	run_at timestamp with time zone,
	priority integer,
	idempotency_key text,
	ordering_key text,
	max_attempts integer,
	metadata jsonb,
	expires_at timestamp with time zone,
	recipient_zone text
);


--
-- Name: TYPE message_spec; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TYPE herald.message_spec IS 'A message to enqueue: the fields of herald.enqueue; NULL takes the default.';


--
-- Name: message_status; Type: TYPE; Schema: herald; Owner: -
--

CREATE TYPE herald.message_status AS (
	message_id bigint,
	channel text,
	status text,
	attempts integer,
	max_attempts integer,
	run_at timestamp with time zone,
	created_at timestamp with time zone,
	finished_at timestamp with time zone,
	expires_at timestamp with time zone,
	last_error_class text,
	last_error_code text,
	provider_message_id text,
	outcome text,
	outcome_type text,
	outcome_code text,
	outcome_at timestamp with time zone
);


--
-- Name: TYPE message_status; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TYPE herald.message_status IS 'A message as its producer sees it: state, attempts, times, failure class and code, receipt, outcome; no payload, recipient or error text.';


--
-- Name: _address_problem(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._address_problem(address text) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE
    AS $_$
DECLARE
  v_local text := substring(address FROM '^(.*)@[^@]*$');
  v_domain text := substring(address FROM '@([^@]*)$');
  v_ascii text;
BEGIN
  IF v_local ~ '[^\x01-\x7f]' THEN
    RETURN ARRAY[format('%L has a local part outside ASCII, which needs SMTPUTF8 at every server on the way', address),
                 'give an address whose local part is ASCII'];
  END IF;
  IF v_domain ~ '[^\x01-\x7f]' THEN
    v_ascii := v_local || '@' || (SELECT string_agg(CASE WHEN l ~ '[^\x01-\x7f]' THEN 'xn--' || herald._punycode(label => l) ELSE l END,
                                                    '.' ORDER BY o)
                                  FROM regexp_split_to_table(lower(normalize(v_domain, NFC)), '\.') WITH ORDINALITY AS x (l, o));
    IF herald._email_address(recipient => v_ascii) THEN
      RETURN ARRAY[format('%L has a domain in Unicode: give it in ASCII (IDNA), %s', address, v_ascii),
                   'providers take domains in ASCII; libraries convert them: Python ''bücher.de''.encode(''idna''), Go idna.Lookup.ToASCII'];
    END IF;
  END IF;
  RETURN ARRAY[format('%L is not an e-mail address', address), 'expected local-part@domain, e.g. ana@example.com'];
END
$_$;


--
-- Name: FUNCTION _address_problem(address text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._address_problem(address text) IS 'Private: why a text is not an e-mail address herald takes ({message, hint}), with the ASCII form of a Unicode domain.';


--
-- Name: _append_error(jsonb, jsonb); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._append_error(errors jsonb, entry jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT (CASE WHEN jsonb_array_length(errors) >= 20 THEN errors - 0 ELSE errors END) || jsonb_build_array(entry)
$$;


--
-- Name: FUNCTION _append_error(errors jsonb, entry jsonb); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._append_error(errors jsonb, entry jsonb) IS 'Private: append an entry to a message''s error history, keeping the last 20.';


--
-- Name: _backoff(integer, interval, interval); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._backoff(attempt integer, base interval, cap interval) RETURNS interval
    LANGUAGE sql
    AS $$
  SELECT least(cap, base * power(2, least(greatest(attempt, 1) - 1, 30))) * (0.5 + random() * 0.5)
$$;


--
-- Name: FUNCTION _backoff(attempt integer, base interval, cap interval); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._backoff(attempt integer, base interval, cap interval) IS 'Private: exponential backoff with equal jitter for a retry attempt.';


--
-- Name: _base64(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._base64(text text) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    AS $_$
BEGIN
  IF text !~ '^[A-Za-z0-9+/\r\n]*={0,2}[\r\n]*$' THEN
    RETURN false;
  END IF;
  PERFORM decode(text, 'base64');
  RETURN true;
EXCEPTION WHEN invalid_parameter_value THEN
  RETURN false;
END
$_$;


--
-- Name: FUNCTION _base64(text text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._base64(text text) IS 'Private: whether a text is base64 that decodes.';


--
-- Name: _budget_after(timestamp with time zone, timestamp with time zone, interval); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._budget_after(clear_at timestamp with time zone, now timestamp with time zone, spent interval) RETURNS timestamp with time zone
    LANGUAGE sql STABLE
    AS $$
  SELECT greatest(clear_at, now) + spent
$$;


--
-- Name: FUNCTION _budget_after(clear_at timestamp with time zone, now timestamp with time zone, spent interval); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._budget_after(clear_at timestamp with time zone, now timestamp with time zone, spent interval) IS 'Private: a budget''s clear_at after more is spent from it (inlined).';


--
-- Name: _budget_clock(timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._budget_clock(now timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE sql
    AS $$
  SELECT CASE WHEN now = pg_catalog.now() THEN clock_timestamp() ELSE now END
$$;


--
-- Name: FUNCTION _budget_clock(now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._budget_clock(now timestamp with time zone) IS 'Private: the time a budget is counted at: the real time for the transaction''s own clock, else the clock given (inlined).';


--
-- Name: _callback_names(); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._callback_names(OUT "group" text, OUT producer text) RETURNS record
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT 'herald.callbacks', 'herald:callbacks'
$$;


--
-- Name: FUNCTION _callback_names(OUT "group" text, OUT producer text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._callback_names(OUT "group" text, OUT producer text) IS 'Private: the consumer group and the producer name of status callbacks.';


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: messages; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.messages (
    id bigint NOT NULL,
    producer text NOT NULL COLLATE pg_catalog."C",
    channel text NOT NULL,
    recipient text NOT NULL,
    recipient_zone text,
    payload jsonb NOT NULL,
    metadata jsonb,
    priority smallint DEFAULT 0 NOT NULL,
    run_at timestamp with time zone NOT NULL,
    ordering_key text COLLATE pg_catalog."C",
    idempotency_key text COLLATE pg_catalog."C",
    status text DEFAULT 'queued'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    max_attempts integer NOT NULL,
    lease_token bigint,
    leased_by text,
    lease_expires_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone,
    provider_message_id text,
    outcome text,
    outcome_type text,
    outcome_code text,
    outcome_at timestamp with time zone,
    last_error text,
    last_error_class text,
    last_error_code text,
    errors jsonb DEFAULT '[]'::jsonb NOT NULL,
    CONSTRAINT messages_attempts_range CHECK (((attempts >= 0) AND ((max_attempts >= 1) AND (max_attempts <= 100)))),
    CONSTRAINT messages_error_class_known CHECK ((last_error_class = ANY (ARRAY['transient'::text, 'rate_limited'::text, 'quota'::text, 'configuration'::text, 'permanent'::text]))),
    CONSTRAINT messages_finished_when_terminal CHECK (((status = ANY (ARRAY['sent'::text, 'dead'::text, 'cancelled'::text, 'expired'::text, 'suppressed'::text])) = (finished_at IS NOT NULL))),
    CONSTRAINT messages_lease_when_processing CHECK (((status = 'processing'::text) = ((lease_token IS NOT NULL) AND (lease_expires_at IS NOT NULL)))),
    CONSTRAINT messages_outcome_known CHECK ((outcome = ANY (ARRAY['delivered'::text, 'deferred'::text, 'bounced'::text, 'complained'::text, 'unsubscribed'::text, 'undelivered'::text]))),
    CONSTRAINT messages_status_known CHECK ((status = ANY (ARRAY['queued'::text, 'held'::text, 'processing'::text, 'sent'::text, 'dead'::text, 'cancelled'::text, 'expired'::text, 'suppressed'::text])))
)
WITH (fillfactor='80', autovacuum_vacuum_scale_factor='0.01', autovacuum_vacuum_insert_scale_factor='0.01', autovacuum_analyze_scale_factor='0.02', autovacuum_vacuum_cost_delay='0');


--
-- Name: TABLE messages; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.messages IS 'One row per notification: what to send, its pipeline state, and its delivery outcome.';


--
-- Name: COLUMN messages.producer; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.messages.producer IS 'Who enqueued it (herald._producer): the role, or intake:<token name>; scopes idempotency keys and herald.status.';


--
-- Name: COLUMN messages.recipient_zone; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.messages.recipient_zone IS 'The recipient''s IANA time zone, given by the producer: a channel with quiet_per_recipient keeps its quiet hours in it. NULL: the channel''s quiet_zone.';


--
-- Name: COLUMN messages.priority; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.messages.priority IS 'Lower runs first: -100..100, within the producer''s herald.producers.min_priority..100 (0..100 without a row).';


--
-- Name: COLUMN messages.ordering_key; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.messages.ordering_key IS 'Messages of one producer with the same key are sent one at a time, in id order.';


--
-- Name: COLUMN messages.status; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.messages.status IS 'queued, held (behind an earlier message of its ordering key), processing, or finished: sent, dead, cancelled, expired, suppressed.';


--
-- Name: COLUMN messages.lease_token; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.messages.lease_token IS 'Fencing token of the current claim; NULL unless processing.';


--
-- Name: COLUMN messages.expires_at; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.messages.expires_at IS 'Deadline: not sent by then, the message ends expired (least of the producer''s expires_at and due time + channel ttl).';


--
-- Name: COLUMN messages.outcome; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.messages.outcome IS 'What the provider reported after sent (herald.record_delivery_events): delivered, deferred, bounced, complained, unsubscribed, undelivered.';


--
-- Name: COLUMN messages.outcome_type; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.messages.outcome_type IS 'For bounced: hard (the address does not exist) or soft (mailbox full, blocked for now).';


--
-- Name: COLUMN messages.outcome_code; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.messages.outcome_code IS 'The provider''s code for the outcome (SMTP status, Twilio ErrorCode); producers see it.';


--
-- Name: COLUMN messages.last_error; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.messages.last_error IS 'Text of the last failure (at most 2,000 characters); never shown to producers.';


--
-- Name: COLUMN messages.last_error_code; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.messages.last_error_code IS 'Short code of the last failure (SMTP reply, HTTP status, provider error code); producers see it.';


--
-- Name: COLUMN messages.errors; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.messages.errors IS 'Error history, oldest first, at most 20 entries: {at, attempt, class, code, error, worker}.';


--
-- Name: producers; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.producers (
    producer text NOT NULL COLLATE pg_catalog."C",
    min_priority smallint DEFAULT 0 NOT NULL,
    senders text[],
    max_pending integer,
    pending bigint,
    counted_at timestamp with time zone,
    max_bounce_rate real,
    max_complaint_rate real,
    rate_window interval DEFAULT '01:00:00'::interval NOT NULL,
    rate_min_sent integer DEFAULT 100 NOT NULL,
    sent_recent integer,
    bounced_recent integer,
    complained_recent integer,
    rated_at timestamp with time zone,
    suspended_until timestamp with time zone,
    suspended_reason text,
    callback_url text,
    callback_channel text,
    callback_events text[],
    send_limit integer,
    send_window interval DEFAULT '1 day'::interval NOT NULL,
    concurrency integer,
    CONSTRAINT producers_callback_whole CHECK ((((callback_url IS NULL) = (callback_channel IS NULL)) AND ((callback_events IS NULL) OR (callback_url IS NOT NULL)))),
    CONSTRAINT producers_concurrency_range CHECK (((concurrency >= 1) AND (concurrency <= 100000))),
    CONSTRAINT producers_max_pending_range CHECK (((max_pending >= 1) AND (max_pending <= 1000000000))),
    CONSTRAINT producers_min_priority_range CHECK (((min_priority >= '-100'::integer) AND (min_priority <= 100))),
    CONSTRAINT producers_rate_min_sent_range CHECK (((rate_min_sent >= 1) AND (rate_min_sent <= 1000000000))),
    CONSTRAINT producers_rate_window_range CHECK (((rate_window >= '00:01:00'::interval) AND (rate_window <= '7 days'::interval))),
    CONSTRAINT producers_rates_range CHECK (((max_bounce_rate > (0)::double precision) AND (max_bounce_rate <= (1)::double precision) AND (max_complaint_rate > (0)::double precision) AND (max_complaint_rate <= (1)::double precision))),
    CONSTRAINT producers_send_limit_range CHECK (((send_limit >= 1) AND (send_limit <= 1000000000))),
    CONSTRAINT producers_send_window_range CHECK (((send_window >= '00:00:01'::interval) AND (send_window <= '31 days'::interval))),
    CONSTRAINT producers_senders_listed CHECK ((((cardinality(senders) >= 1) AND (cardinality(senders) <= 100)) AND (array_position(senders, NULL::text) IS NULL)))
)
WITH (autovacuum_analyze_threshold='0', autovacuum_analyze_scale_factor='0');


--
-- Name: TABLE producers; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.producers IS 'Per-producer policy set by admins: the most urgent priority a producer may use (0 without a row), the From addresses it may set (none without a row).';


--
-- Name: COLUMN producers.producer; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.producer IS 'The producer as herald.messages.producer stores it: a role name, or intake:<name>.';


--
-- Name: COLUMN producers.min_priority; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.min_priority IS 'Most urgent priority the producer may use (lower runs first); above 0 it is also its default priority.';


--
-- Name: COLUMN producers.senders; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.senders IS 'E-mail From addresses the producer may set in a payload: ana@example.com (that address) or example.com (any address there); NULL: none.';


--
-- Name: COLUMN producers.max_pending; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.max_pending IS 'Most unfinished (queued, held, processing) messages the producer may have; over it, its enqueues are refused (53400) until herald.count_producers finds fewer. NULL: no limit.';


--
-- Name: COLUMN producers.pending; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.pending IS 'The producer''s unfinished messages when herald.count_producers last counted them (only with max_pending).';


--
-- Name: COLUMN producers.counted_at; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.counted_at IS 'When herald.count_producers last counted pending.';


--
-- Name: COLUMN producers.max_bounce_rate; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.max_bounce_rate IS 'Most of its messages sent or dead in the last rate_window that may bounce for good (0..1, e.g. 0.05); over it (with rate_min_sent sent) the producer is suspended. NULL: no bound.';


--
-- Name: COLUMN producers.max_complaint_rate; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.max_complaint_rate IS 'Most of its messages sent in the last rate_window that may draw a complaint (0..1, e.g. 0.003); over it the producer is suspended. NULL: no bound.';


--
-- Name: COLUMN producers.rate_window; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.rate_window IS 'The span the bounce and complaint rates are counted over, and how long a suspension lasts.';


--
-- Name: COLUMN producers.rate_min_sent; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.rate_min_sent IS 'Fewest messages in the window before the rates count (a bounce of 1 in 2 says little).';


--
-- Name: COLUMN producers.sent_recent; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.sent_recent IS 'Messages sent or dead in the last rate_window when herald.count_producers last counted (only with a rate bound).';


--
-- Name: COLUMN producers.bounced_recent; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.bounced_recent IS 'Of sent_recent, those that bounced for good (a hard bounce, or a refusal that rules the address out).';


--
-- Name: COLUMN producers.complained_recent; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.complained_recent IS 'Of sent_recent, those whose recipient complained.';


--
-- Name: COLUMN producers.rated_at; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.rated_at IS 'When herald.count_producers last counted the rates (at most each 60th of rate_window).';


--
-- Name: COLUMN producers.suspended_until; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.suspended_until IS 'Set by herald.count_producers when a rate went over its bound: until then enqueue refuses the producer (53400) and its queued messages wait. An admin may clear it.';


--
-- Name: COLUMN producers.suspended_reason; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.suspended_reason IS 'Why the producer was suspended: the counts and the bound.';


--
-- Name: COLUMN producers.callback_url; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.callback_url IS 'Where herald.dispatch_callbacks posts what happens to the producer''s messages (a webhook on callback_channel); NULL: no callbacks. Checked by trigger producers_callbacks.';


--
-- Name: COLUMN producers.callback_channel; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.callback_channel IS 'The webhook channel the producer''s callbacks go out on (its secrets sign them); set with callback_url.';


--
-- Name: COLUMN producers.callback_events; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.callback_events IS 'The log events called back (sent, dead, delivered, ...); NULL: every event but accepted, rerouted and deferred.';


--
-- Name: COLUMN producers.send_limit; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.send_limit IS 'Most messages the producer may enqueue per send_window, on every channel together, from every runner and intake (herald.producer_buckets): the bound on what a stolen credential or a runaway loop can spend; past it enqueue refuses (53400 producer). NULL: no limit.';


--
-- Name: COLUMN producers.send_window; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.send_window IS 'The span send_limit counts over.';


--
-- Name: COLUMN producers.concurrency; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.producers.concurrency IS 'The producer''s own producer_concurrency on every channel that has one, in place of the channel''s: a larger share for a busy tenant, a smaller one for a suspect one. NULL: the channel''s.';


--
-- Name: _callback_spec(herald.producers, herald.messages, text, bigint, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._callback_spec(p herald.producers, m herald.messages, kind text, "offset" bigint, at timestamp with time zone) RETURNS herald.message_spec
    LANGUAGE sql STABLE
    AS $$
  SELECT CASE WHEN p.callback_url IS NOT NULL
               AND CASE WHEN p.callback_events IS NULL THEN kind NOT IN ('accepted', 'rerouted', 'deferred')
                        ELSE kind = ANY (p.callback_events) END
    THEN ROW(p.callback_channel, p.callback_url,
             jsonb_build_object('event', kind, 'offset', "offset", 'at', at, 'idempotency_key', m.idempotency_key,
                                'message', to_jsonb(herald._message_status(m))),
             NULL, NULL, NULL, 'message:' || m.id, NULL, NULL, NULL, NULL)::herald.message_spec
  END
$$;


--
-- Name: FUNCTION _callback_spec(p herald.producers, m herald.messages, kind text, "offset" bigint, at timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._callback_spec(p herald.producers, m herald.messages, kind text, "offset" bigint, at timestamp with time zone) IS 'Private: the status callback of one log event for its producer, as a message spec (NULL: none).';


--
-- Name: _callbacks_group(); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._callbacks_group() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _callbacks_group(); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._callbacks_group() IS 'Private: the function of trigger producers_callbacks_group.';


--
-- Name: _caller(); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._caller() RETURNS text
    LANGUAGE sql STABLE
    AS $$
  SELECT CASE current_setting('role') WHEN 'none' THEN session_user::text ELSE current_setting('role') END
$$;


--
-- Name: FUNCTION _caller(); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._caller() IS 'Private: the calling role (SET ROLE, else the login role), also inside SECURITY DEFINER functions.';


--
-- Name: _channel_quiet(time without time zone, time without time zone, smallint[], text, boolean, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._channel_quiet(quiet_from time without time zone, quiet_until time without time zone, quiet_days smallint[], quiet_zone text, quiet_per_recipient boolean, now timestamp with time zone) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
  SELECT CASE WHEN quiet_from IS NULL AND quiet_days IS NULL THEN false
              WHEN NOT herald._time_zone(name => quiet_zone) THEN true
              ELSE NOT quiet_per_recipient
                   AND herald._quiet(quiet_from => quiet_from, quiet_until => quiet_until, quiet_days => quiet_days,
                                     quiet_zone => quiet_zone, now => now)
         END
$$;


--
-- Name: FUNCTION _channel_quiet(quiet_from time without time zone, quiet_until time without time zone, quiet_days smallint[], quiet_zone text, quiet_per_recipient boolean, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._channel_quiet(quiet_from time without time zone, quiet_until time without time zone, quiet_days smallint[], quiet_zone text, quiet_per_recipient boolean, now timestamp with time zone) IS 'Private: whether a channel is closed as a whole by its quiet hours or days, or by a quiet_zone the server does not know (inlined).';


--
-- Name: _channels_quiet_zone_check(); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._channels_quiet_zone_check() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _channels_quiet_zone_check(); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._channels_quiet_zone_check() IS 'Private: the function of trigger channels_quiet_zone.';


--
-- Name: _check_arrays(text[], integer[], integer, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._check_arrays(fields text[], lengths integer[], required integer, code text DEFAULT '22V12'::text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
DECLARE
  i integer;
BEGIN
  FOR i IN 1 .. cardinality(fields) LOOP
    IF lengths[i] IS NULL THEN
      IF i <= required THEN
        PERFORM herald._reject(code => code, field => fields[i], message => 'must not be NULL');
      END IF;
    ELSIF lengths[i] <> lengths[1] THEN
      PERFORM herald._reject(code => code, field => fields[i],
        message => format('has %s elements but %s has %s', lengths[i], fields[1], lengths[1]));
    END IF;
  END LOOP;
END
$$;


--
-- Name: FUNCTION _check_arrays(fields text[], lengths integer[], required integer, code text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._check_arrays(fields text[], lengths integer[], required integer, code text) IS 'Private: raise an error naming a NULL or mismatched array argument of a batch call.';


--
-- Name: _check_callback_channel(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._check_callback_channel(channel text) RETURNS void
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
  IF NOT EXISTS (SELECT FROM herald.channels c
                 WHERE c.name = _check_callback_channel.channel AND c.producers = ARRAY[(herald._callback_names()).producer]) THEN
    PERFORM herald._reject(code => '42501', field => 'callback_channel',
      message => format('channel %L must be open to %L alone (herald.channels.producers): another producer on it could send signed callbacks',
                        _check_callback_channel.channel, (herald._callback_names()).producer),
      hint => format('UPDATE herald.channels SET producers = %L WHERE name = %L',
                     ARRAY[(herald._callback_names()).producer]::text, _check_callback_channel.channel));
  END IF;
END
$$;


--
-- Name: FUNCTION _check_callback_channel(channel text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._check_callback_channel(channel text) IS 'Private: refuse a callback channel that producers other than the callbacks'' owner may enqueue on.';


--
-- Name: _check_clock(timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._check_clock(now timestamp with time zone) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
  SELECT CASE WHEN now IS DISTINCT FROM pg_catalog.now() THEN herald._refuse_clock(now => now) ELSE true END
$$;


--
-- Name: FUNCTION _check_clock(now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._check_clock(now timestamp with time zone) IS 'Private: pass the transaction''s now(); anything else goes to herald._refuse_clock (inlined).';


--
-- Name: _check_group(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._check_group("group" text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $_$
BEGIN
  IF "group" IS NULL OR "group" !~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$' THEN
    PERFORM herald._reject('22V12', 'group', 'must be 1 to 100 letters, digits, _ . : - starting with a letter or digit');
  ELSIF "group" ^@ 'herald.' THEN
    PERFORM herald._reject('22V12', 'group', format('%L is herald''s own group; read the log with a group of your own', "group"));
  END IF;
END
$_$;


--
-- Name: FUNCTION _check_group("group" text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._check_group("group" text) IS 'Private: refuse a malformed consumer group name, or one of herald''s own (herald.*).';


--
-- Name: _check_kind(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._check_kind(kind text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
  IF kind NOT IN ('email', 'sms', 'webhook', 'custom') THEN
    PERFORM herald._reject(code => '22V12', field => 'kind', message => format('%L is not a channel kind', kind),
      hint => 'email, sms, webhook or custom');
  END IF;
END
$$;


--
-- Name: FUNCTION _check_kind(kind text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._check_kind(kind text) IS 'Private: 22V12 kind unless email, sms, webhook or custom.';


--
-- Name: _check_not_null(text[], boolean[]); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._check_not_null(fields text[], present boolean[]) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
DECLARE
  i integer;
BEGIN
  FOR i IN 1 .. cardinality(fields) LOOP
    IF NOT present[i] THEN
      PERFORM herald._reject(code => '22V12', field => fields[i], message => 'must not be NULL');
    END IF;
  END LOOP;
END
$$;


--
-- Name: FUNCTION _check_not_null(fields text[], present boolean[]); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._check_not_null(fields text[], present boolean[]) IS 'Private: refuse the first argument that is NULL (22V12, named in COLUMN).';


--
-- Name: _check_pauser(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._check_pauser(by text) RETURNS void
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
  IF by NOT IN ('operator', 'runner') THEN
    PERFORM herald._reject(code => '22V12', field => 'by', message => format('%L is neither operator nor runner', by));
  END IF;
  IF by = 'operator' AND NOT pg_has_role(herald._caller(), 'herald_admin', 'MEMBER') THEN
    RAISE EXCEPTION 'by: only herald_admin may pause or resume as operator'
      USING ERRCODE = '42501', COLUMN = 'by', HINT = 'a runner passes by => ''runner''';
  END IF;
END
$$;


--
-- Name: FUNCTION _check_pauser(by text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._check_pauser(by text) IS 'Private: refuse a pause or resume by someone who may not (operator: herald_admin only).';


--
-- Name: _check_source(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._check_source(source text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $_$
BEGIN
  IF source IS NULL OR source !~ '^[a-z][a-z0-9_]{0,31}$' THEN
    PERFORM herald._reject(code => '22V12', field => 'source', message => 'must be a name of 1 to 32 of a-z, 0-9, _');
  END IF;
END
$_$;


--
-- Name: FUNCTION _check_source(source text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._check_source(source text) IS 'Private: 22V12 source unless a name of 1 to 32 of a-z, 0-9, _.';


--
-- Name: _consumer_partition(text, integer, boolean); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._consumer_partition("group" text, partition integer, skip_locked boolean, OUT partitions integer, OUT committed_offset bigint) RETURNS record
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


--
-- Name: FUNCTION _consumer_partition("group" text, partition integer, skip_locked boolean, OUT partitions integer, OUT committed_offset bigint); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._consumer_partition("group" text, partition integer, skip_locked boolean, OUT partitions integer, OUT committed_offset bigint) IS 'Private: check a consumer group and partition, optionally locking its offset row.';


--
-- Name: _copies(jsonb); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._copies(payload jsonb) RETURNS TABLE(list text, ordinal bigint, address text)
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT l.list, a.ordinal, a.address
  FROM unnest('{cc,bcc}'::text[]) AS l (list),
       jsonb_array_elements_text(CASE WHEN jsonb_typeof(_copies.payload -> l.list) = 'array'
                                      THEN _copies.payload -> l.list END) WITH ORDINALITY AS a (address, ordinal)
$$;


--
-- Name: FUNCTION _copies(payload jsonb); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._copies(payload jsonb) IS 'Private: the cc and bcc addresses of an e-mail payload, by list and ordinal.';


--
-- Name: _email_address(text, boolean); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._email_address(recipient text, syntax_checked boolean DEFAULT false) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $_$
  SELECT (octet_length(recipient) < 66 OR (octet_length(recipient) <= 254 AND recipient !~ '[^.@]{64}[^@]*$'))
     AND (syntax_checked OR recipient ~ ('^(?:' || herald._recipient_pattern('email') || ')$'))
$_$;


--
-- Name: FUNCTION _email_address(recipient text, syntax_checked boolean); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._email_address(recipient text, syntax_checked boolean) IS 'Private: true when a recipient is an e-mail address herald accepts.';


--
-- Name: _email_addresses(jsonb); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._email_addresses(payload jsonb) RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT 1 + coalesce(jsonb_array_length(payload -> 'cc'), 0) + coalesce(jsonb_array_length(payload -> 'bcc'), 0)
$$;


--
-- Name: FUNCTION _email_addresses(payload jsonb); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._email_addresses(payload jsonb) IS 'Private: how many addresses an e-mail goes to (its recipient, cc and bcc), for max_recipients (inlined).';


--
-- Name: _enqueue(herald.message_spec[], timestamp with time zone, boolean, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._enqueue(specs herald.message_spec[], now timestamp with time zone, single boolean, as_producer text DEFAULT NULL::text) RETURNS bigint[]
    LANGUAGE plpgsql
    AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => _enqueue.now); -- first: a forged clock changes nothing
  n integer := cardinality(specs);
  v_ids bigint[];
  v_channels text[];
  v_hashes integer[];
  v_list text;
  v_keyed boolean;
  v_ordered boolean;
  v_held boolean[];
  v_kind text;
  v_skip bigint[] := '{}';
  v_specs herald.message_spec[] := specs;
  v_first bigint[];
  v_valid boolean := true;
  v_conflict integer; -- the index in v_skip of a repeat whose key names another notification
  v_stored bigint;
  v_logged bigint[];
  v_logged_channels text[];
  v_logged_hashes integer[];
  v_barred bigint[];
  v_policy herald.producers; -- the producer's row, or what a producer without one gets
  v_full boolean; -- at its max_pending when last counted, or suspended (NULL: no bound)
  v_suppressing boolean;
  v_limiting boolean; -- a channel has a recipient_limit or range_limit
  i integer;
BEGIN
  v_policy.producer := coalesce(as_producer, herald._producer());
  SELECT EXISTS (SELECT FROM herald.suppressions), EXISTS (SELECT FROM herald.channels c WHERE c.recipient_limit > 0 OR c.range_limit > 0),
         coalesce(p.min_priority, 0), p.senders, p.send_limit, p.send_window,
         p.pending >= p.max_pending OR p.suspended_until > _enqueue.now
  INTO v_suppressing, v_limiting, v_policy.min_priority, v_policy.senders, v_policy.send_limit, v_policy.send_window, v_full
  FROM (SELECT) AS one LEFT JOIN herald.producers p ON p.producer = v_policy.producer;
  IF n = 1 THEN -- the same values without starting a query (a single enqueue's cost)
    v_ids := ARRAY[nextval('herald.messages_id_seq')];
    v_channels := ARRAY[(specs[1]).channel];
    v_hashes := ARRAY[herald._key_hash(ordering_key => (specs[1]).ordering_key, recipient => (specs[1]).recipient)];
    v_keyed := (specs[1]).idempotency_key IS NOT NULL;
    v_ordered := (specs[1]).ordering_key IS NOT NULL;
  ELSE
    SELECT array_agg(nextval('herald.messages_id_seq')), array_agg(s.channel),
           array_agg(herald._key_hash(ordering_key => s.ordering_key, recipient => s.recipient)),
           string_agg(coalesce(s.recipient, ''), E'\n'), bool_or(s.idempotency_key IS NOT NULL),
           bool_or(s.ordering_key IS NOT NULL)
    INTO v_ids, v_channels, v_hashes, v_list, v_keyed, v_ordered
    FROM unnest(specs) AS s;
    v_kind := herald._recipient_list_kind(list => v_list, n => n); -- (one recipient: _valid matches it)
  END IF;

  IF v_keyed THEN
    SELECT r.positions, r.first_ids, r.valid INTO v_skip, v_first, v_valid
    FROM herald._repeats(specs => specs, policy => v_policy, ids => v_ids, now => _enqueue.now) AS r;
    v_skip := coalesce(v_skip, '{}');
    IF cardinality(v_skip) > 0 AND v_valid THEN -- a repeat carries what the message it repeats does
      SELECT min(r.i) INTO v_conflict
      FROM unnest(v_skip, v_first) WITH ORDINALITY AS r (pos, first_id, i)
      LEFT JOIN herald.messages m ON m.id = r.first_id -- stored; else one of this call
      WHERE ((specs[r.pos]).channel, (specs[r.pos]).recipient, (specs[r.pos]).payload) IS DISTINCT FROM
            (coalesce(m.channel, (specs[array_position(v_ids, r.first_id)]).channel),
             coalesce(m.recipient, (specs[array_position(v_ids, r.first_id)]).recipient),
             coalesce(m.payload, (specs[array_position(v_ids, r.first_id)]).payload));
      IF v_conflict IS NOT NULL THEN
        PERFORM herald._reject(code => '22V20',
          field => CASE WHEN single THEN '' ELSE format('messages[%s].', v_skip[v_conflict] - 1) END || 'idempotency_key',
          message => format('%L was used for message %s, with another channel, recipient or payload',
                            (specs[v_skip[v_conflict]]).idempotency_key, v_first[v_conflict]),
          hint => 'a key names one notification: a retry sends the same one; give another notification its own key');
      END IF;
    END IF;
    FOR i IN 1 .. cardinality(v_skip) LOOP
      v_specs[v_skip[i]] := NULL; -- a NULL spec joins no channel: not inserted
    END LOOP;
  END IF;

  IF v_full AND cardinality(v_skip) < n THEN -- repeats store nothing: they are answered
    PERFORM CASE WHEN p.suspended_until > _enqueue.now
      THEN herald._reject(code => '53400', field => 'producer',
        message => format('producer %L is suspended until %s: %s', p.producer, p.suspended_until, p.suspended_reason),
        hint => 'fix the list it sends to; an admin may end it early (herald.producers.suspended_until)')
      ELSE herald._reject(code => '53400', field => 'producer',
        message => format('producer %L had %s unfinished messages at %s, at its max_pending of %s', p.producer, p.pending,
                          p.counted_at, p.max_pending),
        hint => 'retry once the backlog has been sent (herald.count_producers counts again); an admin raises herald.producers.max_pending')
      END
    FROM herald.producers p WHERE p.producer = v_policy.producer;
  END IF;

  IF v_suppressing THEN -- the input positions of suppressed recipients, repeats left out
    SELECT array_agg(s.ordinality) INTO v_barred
    FROM unnest(specs) WITH ORDINALITY AS s
    JOIN herald.channels c ON c.name = s.channel
    WHERE NOT s.ordinality = ANY (v_skip)
      AND EXISTS (SELECT FROM herald._suppression(kind => c.kind, recipient => s.recipient, now => _enqueue.now));
  END IF;

  IF v_ordered THEN
    v_held := herald._held(specs => v_specs, producer => v_policy.producer, barred => v_barred);
  END IF;

  INSERT INTO herald.messages AS m
    (id, producer, channel, recipient, recipient_zone, payload, metadata, priority, run_at, ordering_key,
     idempotency_key, max_attempts, created_at, expires_at, status, finished_at)
  SELECT v_ids[s.ordinality], v_policy.producer, c.name, s.recipient, s.recipient_zone, s.payload, s.metadata,
         coalesce(s.priority, greatest(v_policy.min_priority, 0)),
         coalesce(CASE WHEN c.quiet_per_recipient
                       THEN herald._quiet_end(quiet_from => c.quiet_from, quiet_until => c.quiet_until, quiet_days => c.quiet_days,
                                              quiet_zone => c.quiet_zone, at => greatest(s.run_at, _enqueue.now),
                                              recipient_zone => s.recipient_zone)
                  END, greatest(s.run_at, _enqueue.now)), s.ordering_key, s.idempotency_key,
         coalesce(s.max_attempts, c.max_attempts), _enqueue.now,
         least(s.expires_at, greatest(s.run_at, _enqueue.now) + c.ttl),
         CASE WHEN s.ordinality = ANY (v_barred) THEN 'suppressed' WHEN v_held[s.ordinality] THEN 'held' ELSE 'queued' END,
         CASE WHEN s.ordinality = ANY (v_barred) THEN _enqueue.now END
  FROM unnest(v_specs) WITH ORDINALITY AS s
  JOIN herald.channels c ON c.name = s.channel
  WHERE herald._valid(kind => c.kind, max_payload_bytes => c.max_payload_bytes, max_segments => c.max_segments, max_recipients => c.max_recipients, recipient => s.recipient,
                      payload => s.payload, run_at => s.run_at, priority => s.priority, policy => v_policy,
                      channel_producers => c.producers, channel_prefixes => c.recipient_prefixes,
                      max_attempts => s.max_attempts, metadata => s.metadata,
                      idempotency_key => s.idempotency_key, ordering_key => s.ordering_key,
                      expires_at => s.expires_at, recipient_zone => s.recipient_zone, now => _enqueue.now,
                      checked_kind => v_kind);
  GET DIAGNOSTICS v_stored = ROW_COUNT;

  IF v_stored + cardinality(v_skip) < n OR NOT v_valid THEN
    FOR i IN 1 .. n LOOP
      CONTINUE WHEN v_valid AND i = ANY (v_skip); -- a repeat: checked above
      PERFORM herald._validate(spec => specs[i], policy => v_policy, now => _enqueue.now,
                               field_prefix => CASE WHEN single THEN '' ELSE format('messages[%s].', i - 1) END);
    END LOOP;
    RAISE EXCEPTION 'herald: herald._valid refused a message that herald._validate accepts'
      USING ERRCODE = 'XX000';
  END IF;
  IF v_limiting AND v_stored > 0 THEN
    PERFORM herald._spend_recipients(specs => v_specs, barred => v_barred, single => single, now => _enqueue.now);
  END IF;
  IF v_policy.send_limit IS NOT NULL AND v_stored > coalesce(cardinality(v_barred), 0) THEN -- suppressed cost nothing
    PERFORM herald._spend_producer(policy => v_policy, n => (v_stored - coalesce(cardinality(v_barred), 0))::integer,
                                   now => _enqueue.now);
  END IF;

  IF cardinality(v_skip) > 0 THEN
    SELECT array_agg(v_ids[o]), array_agg(v_channels[o]), array_agg(v_hashes[o])
    INTO v_logged, v_logged_channels, v_logged_hashes
    FROM generate_series(1, n) AS o WHERE NOT o = ANY (v_skip);
  END IF;
  IF v_stored > 0 THEN
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
    VALUES ('accepted', _enqueue.now, coalesce(v_logged, v_ids), coalesce(v_logged_channels, v_channels),
            coalesce(v_logged_hashes, v_hashes));
  END IF;
  IF v_barred IS NOT NULL AND v_stored > 0 THEN -- ids follow input order
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
    SELECT 'suppressed', _enqueue.now, array_agg(v_ids[o] ORDER BY o), array_agg(v_channels[o] ORDER BY o),
           array_agg(v_hashes[o] ORDER BY o)
    FROM unnest(v_barred) AS o;
  END IF;
  FOR i IN 1 .. cardinality(v_skip) LOOP
    v_ids[v_skip[i]] := v_first[i];
  END LOOP;
  RETURN v_ids;
END
$$;


--
-- Name: FUNCTION _enqueue(specs herald.message_spec[], now timestamp with time zone, single boolean, as_producer text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._enqueue(specs herald.message_spec[], now timestamp with time zone, single boolean, as_producer text) IS 'Private: the one writer of herald.messages (check, store, log ''accepted''), behind every enqueue function.';


--
-- Name: _event_detail(text, text, text, text, integer); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._event_detail(kind text, provider_message_id text, error_class text, error text, attempts integer) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
  SELECT CASE kind
           WHEN 'sent' THEN CASE
             WHEN attempts IS NULL THEN jsonb_strip_nulls(jsonb_build_object(
               'provider_message_id', provider_message_id, 'attempts', attempts))
             WHEN provider_message_id IS NULL THEN jsonb_build_object('attempts', attempts)
             ELSE jsonb_build_object('provider_message_id', provider_message_id, 'attempts', attempts)
           END
           WHEN 'dead' THEN jsonb_strip_nulls(jsonb_build_object(
             'error_class', error_class, 'error', error, 'attempts', attempts))
           ELSE '{}'::jsonb
         END
$$;


--
-- Name: FUNCTION _event_detail(kind text, provider_message_id text, error_class text, error text, attempts integer); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._event_detail(kind text, provider_message_id text, error_class text, error text, attempts integer) IS 'Private: the JSON detail of a log event (inlined).';


--
-- Name: _gsm7(boolean); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._gsm7(extension_only boolean DEFAULT false) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $_$
  SELECT CASE WHEN extension_only THEN '[\f^{}\\\[~\]|€]'
              ELSE '[@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&''()*+,./0-9:;<=>?¡A-ZÄÖÑÜ§¿a-zäöñüà\f^{}\\\[~\]|€-]' END
$_$;


--
-- Name: FUNCTION _gsm7(extension_only boolean); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._gsm7(extension_only boolean) IS 'Private: the GSM-7 characters (or only those of its extension table) as a regular-expression bracket.';


--
-- Name: _held(herald.message_spec[], text, bigint[]); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._held(specs herald.message_spec[], producer text, barred bigint[]) RETURNS boolean[]
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
  v_held boolean[];
  v_keys text[]; -- the call's ordering keys
  v_pending text[]; -- those with a pending message
BEGIN
  IF current_setting('transaction_isolation') = 'read committed' THEN
    IF cardinality(specs) = 1 THEN
      v_keys := ARRAY[(specs[1]).ordering_key];
    ELSE
      v_keys := ARRAY(SELECT DISTINCT s.ordering_key FROM unnest(specs) AS s WHERE s.ordering_key IS NOT NULL);
    END IF;
    PERFORM FROM unnest(v_keys) AS d (k)
    CROSS JOIN LATERAL (SELECT FROM herald.messages e
                        WHERE e.producer = _held.producer AND e.ordering_key = d.k AND e.finished_at IS NULL
                        ORDER BY e.id DESC LIMIT 1 FOR KEY SHARE) AS p;
    IF FOUND THEN -- a new statement: it sees the exits the lock waited for
      -- A scalar subquery, not EXISTS: a probe per key (an EXISTS was planned as a hash
      -- join reading every pending message of the producer).
      SELECT array_agg(d.k) INTO v_pending
      FROM unnest(v_keys) AS d (k)
      WHERE (SELECT true FROM herald.messages e
             WHERE e.producer = _held.producer AND e.ordering_key = d.k AND e.finished_at IS NULL
             LIMIT 1);
    END IF;
  END IF;
  IF cardinality(specs) = 1 THEN -- one message: no earlier one in the call, no window
    RETURN ARRAY[coalesce((specs[1]).ordering_key = ANY (v_pending), false) AND NOT coalesce(1 = ANY (barred), false)];
  END IF;
  SELECT array_agg(x.held ORDER BY x.o) INTO v_held
  FROM (SELECT s.ordinality AS o,
               s.ordering_key IS NOT NULL AND NOT coalesce(s.ordinality = ANY (barred), false)
               AND (count(*) FILTER (WHERE NOT coalesce(s.ordinality = ANY (barred), false))
                      OVER (PARTITION BY s.ordering_key ORDER BY s.ordinality ROWS UNBOUNDED PRECEDING) > 1
                    OR coalesce(s.ordering_key = ANY (v_pending), false)) AS held
        FROM unnest(specs) WITH ORDINALITY AS s) AS x;
  RETURN v_held;
END
$$;


--
-- Name: FUNCTION _held(specs herald.message_spec[], producer text, barred bigint[]); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._held(specs herald.message_spec[], producer text, barred bigint[]) IS 'Private: lock the newest pending message of each ordering key of an enqueue call, and say which of its messages are held.';


--
-- Name: _id_before(regclass, name, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._id_before(tab regclass, col name, cut timestamp with time zone) RETURNS bigint
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
  lo bigint;
  hi bigint;
  mid bigint;
  probe_id bigint;
  probe_at timestamptz;
BEGIN
  EXECUTE format('SELECT min(id), max(id) FROM %s', tab) INTO lo, hi;
  IF lo IS NULL THEN
    RETURN 0;
  END IF;
  lo := lo - 1; -- no row below: nothing yet known before cut
  WHILE lo < hi LOOP
    mid := lo + (hi - lo + 1) / 2;
    EXECUTE format('SELECT max(id), min(%1$I) FROM (SELECT id, %1$I FROM %2$s WHERE id >= $1 ORDER BY id LIMIT 8) p', col, tab)
      INTO probe_id, probe_at USING mid;
    IF probe_at < cut THEN
      lo := probe_id;
    ELSE
      hi := mid - 1;
    END IF;
  END LOOP;
  RETURN greatest(lo, 0);
END
$_$;


--
-- Name: FUNCTION _id_before(tab regclass, col name, cut timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._id_before(tab regclass, col name, cut timestamp with time zone) IS 'Private: an id bounding the rows of a table inserted before a time, by bisecting its primary key (herald.purge).';


--
-- Name: _json_integer(jsonb, text, text, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._json_integer(item jsonb, key text, prefix text, code text) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE
    AS $_$
DECLARE
  v jsonb := item -> key;
  s text;
BEGIN
  IF v IS NULL OR v = 'null' THEN
    RETURN NULL;
  END IF;
  s := v #>> '{}';
  IF jsonb_typeof(v) NOT IN ('number', 'string') OR s !~ '^-?[0-9]{1,9}$' THEN
    PERFORM herald._reject(code, prefix || '.' || key, format('must be an integer, not %s', v));
  END IF;
  RETURN s::integer;
END
$_$;


--
-- Name: FUNCTION _json_integer(item jsonb, key text, prefix text, code text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._json_integer(item jsonb, key text, prefix text, code text) IS 'Private: an integer field of a JSON element, or the error naming it.';


--
-- Name: _json_text(jsonb, text, text, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._json_text(item jsonb, key text, prefix text, code text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    AS $$
DECLARE
  v jsonb := item -> key;
BEGIN
  IF v IS NULL OR v = 'null' THEN
    RETURN NULL;
  ELSIF jsonb_typeof(v) <> 'string' THEN
    PERFORM herald._reject(code, prefix || '.' || key, format('must be a string, not %s', jsonb_typeof(v)));
  END IF;
  RETURN v #>> '{}';
END
$$;


--
-- Name: FUNCTION _json_text(item jsonb, key text, prefix text, code text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._json_text(item jsonb, key text, prefix text, code text) IS 'Private: a string field of a JSON element, or the error naming it.';


--
-- Name: _json_timestamptz(jsonb, text, text, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._json_timestamptz(item jsonb, key text, prefix text, code text) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
  v jsonb := item -> key;
  t timestamptz;
BEGIN
  IF v IS NULL OR v = 'null' THEN
    RETURN NULL;
  END IF;
  IF jsonb_typeof(v) = 'string' THEN
    BEGIN
      t := (v #>> '{}')::timestamptz;
      RETURN t;
    EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR invalid_parameter_value THEN
      NULL; -- fall through to the herald error below
    END;
  END IF;
  PERFORM herald._reject(code, prefix || '.' || key,
    format('must be a timestamp string such as "2030-01-02T03:04:05Z", not %s', v));
  RETURN NULL;
END
$$;


--
-- Name: FUNCTION _json_timestamptz(item jsonb, key text, prefix text, code text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._json_timestamptz(item jsonb, key text, prefix text, code text) IS 'Private: a timestamp field of a JSON element, or the error naming it.';


--
-- Name: _key_hash(text, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._key_hash(ordering_key text, recipient text) RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT hashtext(coalesce(ordering_key, recipient))
$$;


--
-- Name: FUNCTION _key_hash(ordering_key text, recipient text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._key_hash(ordering_key text, recipient text) IS 'Private: a message''s log partition key hash (ordering_key, else recipient).';


--
-- Name: _listening(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._listening(channel text) RETURNS bigint
    LANGUAGE sql
    AS $$
  SELECT setval(CASE channel WHEN 'herald_queue' THEN 'herald.notify_clock_queue'::regclass
                             ELSE 'herald.notify_clock_log'::regclass END, 0)
$$;


--
-- Name: FUNCTION _listening(channel text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._listening(channel text) IS 'Private: mark that a listener of a notification channel may be about to wait.';


--
-- Name: _log_after(bigint, integer, integer, integer); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._log_after(after bigint, partitions integer, partition integer, max integer) RETURNS TABLE("offset" bigint, message_id bigint, kind text, channel text, key_hash integer, at timestamp with time zone, detail jsonb)
    LANGUAGE sql STABLE
    AS $$
  SELECT o.first_offset + o.a + o.i - 2, o.message_id, o.kind, o.channel, o.key_hash, o.at,
         herald._log_detail(o.kind, o.detail, o.provider_message_id, o.attempts)
  FROM (
    SELECT s.first_offset, r.a, e.i, e.message_id, s.kind, e.channel, e.key_hash, s.at,
           e.detail, e.provider_message_id, e.attempts
    FROM herald.log_statements s
    -- a: the statement's first position above `after`; b: the last one a read can need
    -- (computed once per statement: OFFSET 0 keeps the subquery from being inlined into
    -- each of its uses). A statement a read takes whole is not copied into a slice.
    CROSS JOIN LATERAL (
      SELECT x.a, CASE
               WHEN _log_after.partitions = 1 THEN x.a + _log_after.max - 1
               WHEN cardinality(s.key_hashes) - x.a < _log_after.max THEN cardinality(s.key_hashes)
               ELSE coalesce((SELECT x.a + k.i - 1
                              FROM unnest(s.key_hashes[x.a:]) WITH ORDINALITY AS k (h, i)
                              WHERE (k.h & 2147483647) % _log_after.partitions = _log_after.partition
                              ORDER BY k.i OFFSET _log_after.max - 1 LIMIT 1), cardinality(s.key_hashes))
             END AS b,
             x.a = 1 AND x.a + _log_after.max - 1 >= cardinality(s.key_hashes) AS whole
      FROM (SELECT greatest(1, _log_after.after + 2 - s.first_offset) AS a) AS x
      OFFSET 0) AS r
    CROSS JOIN LATERAL unnest(
        CASE WHEN r.whole THEN s.message_ids ELSE s.message_ids[r.a:r.b] END,
        CASE WHEN r.whole THEN s.channels ELSE s.channels[r.a:r.b] END,
        CASE WHEN r.whole THEN s.key_hashes ELSE s.key_hashes[r.a:r.b] END,
        CASE WHEN r.whole THEN s.details ELSE s.details[r.a:r.b] END,
        CASE WHEN r.whole THEN s.provider_message_ids ELSE s.provider_message_ids[r.a:r.b] END,
        CASE WHEN r.whole THEN s.attempts ELSE s.attempts[r.a:r.b] END)
      WITH ORDINALITY AS e(message_id, channel, key_hash, detail, provider_message_id, attempts, i)
    WHERE s.first_offset >= coalesce((SELECT max(h.first_offset) FROM herald.log_statements h
                                      WHERE h.first_offset <= _log_after.after + 1), 0)
      AND (e.key_hash & 2147483647) % _log_after.partitions = _log_after.partition
    ORDER BY s.first_offset, e.i
    LIMIT _log_after.max
  ) o
  -- The subquery's order, which the planner knows it has: no second sort.
  ORDER BY o.first_offset, o.i
$$;


--
-- Name: FUNCTION _log_after(after bigint, partitions integer, partition integer, max integer); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._log_after(after bigint, partitions integer, partition integer, max integer) IS 'Private: the events of one partition after an offset, in order, through log_statements_offset_idx.';


--
-- Name: _log_detail(text, jsonb, text, integer); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._log_detail(kind text, detail jsonb, provider_message_id text, attempts integer) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
  SELECT coalesce(detail,
                  CASE WHEN attempts IS NOT NULL
                    THEN herald._event_detail(kind, provider_message_id, NULL, NULL, attempts) END,
                  '{}'::jsonb)
$$;


--
-- Name: FUNCTION _log_detail(kind text, detail jsonb, provider_message_id text, attempts integer); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._log_detail(kind text, detail jsonb, provider_message_id text, attempts integer) IS 'Private: the detail a reader shows for one log event (inlined).';


--
-- Name: _log_kinds(); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._log_kinds() RETURNS text[]
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT '{accepted,rerouted,sent,dead,cancelled,expired,suppressed,delivered,deferred,bounced,complained,unsubscribed,undelivered}'::text[]
$$;


--
-- Name: FUNCTION _log_kinds(); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._log_kinds() IS 'Private: the kinds of event in the ordered log.';


--
-- Name: _mailbox(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._mailbox(value text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $_$
  SELECT CASE
           WHEN herald._email_address(recipient => value) THEN value
           WHEN value ~ '^[^]["(),:;<>@\\[:cntrl:][:space:]]([^]["(),:;<>@\\[:cntrl:]]*[^]["(),:;<>@\\[:cntrl:][:space:]])? <[^<>]+>$'
                AND herald._email_address(recipient => substring(value FROM '<([^<>]+)>$'))
             THEN substring(value FROM '<([^<>]+)>$')
         END
$_$;


--
-- Name: FUNCTION _mailbox(value text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._mailbox(value text) IS 'Private: the address of an e-mail mailbox (address, or Name <address>), NULL when herald does not accept it.';


--
-- Name: _mailbox_key(text, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._mailbox_key(kind text, recipient text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT CASE WHEN kind <> 'email' THEN recipient
              WHEN strpos(recipient, '+') = 0 THEN lower(recipient)
              ELSE regexp_replace(lower(recipient), '\+[^@]*@', '@') END
$$;


--
-- Name: FUNCTION _mailbox_key(kind text, recipient text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._mailbox_key(kind text, recipient text) IS 'Private: the form of a recipient in herald.recipient_buckets (e-mail in lower case, without a +tag).';


--
-- Name: _mark_sent(bigint[], bigint[], text[], timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._mark_sent(ids bigint[], lease_tokens bigint[], provider_message_ids text[], now timestamp with time zone) RETURNS integer
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
  changed integer;
  v_ordered bigint[];
BEGIN
  WITH sent AS (
    UPDATE herald.messages m
    SET status = 'sent',
        finished_at = _mark_sent.now,
        provider_message_id = coalesce(CASE WHEN length(u.provider_message_id) <= 255 THEN u.provider_message_id END,
                                       m.provider_message_id),
        lease_token = NULL,
        lease_expires_at = NULL
    FROM unnest(ids, lease_tokens, provider_message_ids) AS u(id, lease_token, provider_message_id)
    WHERE m.id = u.id
      AND CASE WHEN u.lease_token IS NULL THEN m.status = 'queued' AND m.attempts > 0
               ELSE m.lease_token = u.lease_token END -- a lease token exists only while processing
    RETURNING m.id, m.channel, m.recipient, m.ordering_key, m.provider_message_id, m.attempts
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes,
                                       provider_message_ids, attempts)
    SELECT 'sent', _mark_sent.now, array_agg(s.id), array_agg(s.channel),
           array_agg(herald._key_hash(s.ordering_key, s.recipient)),
           CASE WHEN count(s.provider_message_id) > 0 THEN array_agg(s.provider_message_id) END,
           array_agg(s.attempts)
    -- Sorted once, below the aggregate, instead of once per array_agg(… ORDER BY):
    -- the arrays are filled from the same rows in the same order.
    FROM (SELECT * FROM sent ORDER BY id) s
    HAVING count(*) > 0
  )
  SELECT count(*), array_agg(s.id) FILTER (WHERE s.ordering_key IS NOT NULL) INTO changed, v_ordered FROM sent s;
  IF v_ordered IS NOT NULL THEN
    PERFORM herald._release_after(ids => v_ordered);
  END IF;
  IF changed > 0 THEN
    PERFORM herald._notify(ARRAY['herald_log']);
  END IF;
  RETURN changed;
END
$$;


--
-- Name: FUNCTION _mark_sent(ids bigint[], lease_tokens bigint[], provider_message_ids text[], now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._mark_sent(ids bigint[], lease_tokens bigint[], provider_message_ids text[], now timestamp with time zone) IS 'Private: mark messages sent (under their lease token, or waiting for a retry), log it, release their ordering keys.';


--
-- Name: _message_specs(jsonb); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._message_specs(messages jsonb) RETURNS herald.message_spec[]
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
  specs herald.message_spec[] := '{}';
  item jsonb;
  p text;
  k text;
  i integer;
BEGIN
  FOR i IN 1 .. jsonb_array_length(messages) LOOP
    item := messages -> (i - 1);
    p := format('messages[%s]', i - 1);
    IF jsonb_typeof(item) <> 'object' THEN
      PERFORM herald._reject(code => '22V11', field => p, message => 'must be a JSON object');
    END IF;
    FOR k IN SELECT jsonb_object_keys(item) LOOP
      IF k NOT IN ('channel', 'recipient', 'payload', 'run_at', 'priority', 'idempotency_key',
                   'ordering_key', 'max_attempts', 'metadata', 'expires_at', 'recipient_zone') THEN
        PERFORM herald._reject(code => '22V11', field => p || '.' || k, message => 'is not a message field',
          hint => 'fields: channel, recipient, payload, run_at, priority, idempotency_key, ordering_key, max_attempts, metadata, expires_at, recipient_zone');
      END IF;
    END LOOP;
    specs[i] := ROW(herald._json_text(item => item, key => 'channel', prefix => p, code => '22V11'),
                    herald._json_text(item => item, key => 'recipient', prefix => p, code => '22V11'),
                    nullif(item -> 'payload', 'null'),
                    herald._json_timestamptz(item => item, key => 'run_at', prefix => p, code => '22V05'),
                    herald._json_integer(item => item, key => 'priority', prefix => p, code => '22V06'),
                    herald._json_text(item => item, key => 'idempotency_key', prefix => p, code => '22V11'),
                    herald._json_text(item => item, key => 'ordering_key', prefix => p, code => '22V11'),
                    herald._json_integer(item => item, key => 'max_attempts', prefix => p, code => '22V07'),
                    nullif(item -> 'metadata', 'null'),
                    herald._json_timestamptz(item => item, key => 'expires_at', prefix => p, code => '22V17'),
                    herald._json_text(item => item, key => 'recipient_zone', prefix => p, code => '22V11'))::herald.message_spec;
  END LOOP;
  RETURN specs;
END
$$;


--
-- Name: FUNCTION _message_specs(messages jsonb); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._message_specs(messages jsonb) IS 'Private: read enqueue_batch elements one by one, naming the first of the wrong shape.';


--
-- Name: _message_status(herald.messages); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._message_status(m herald.messages) RETURNS herald.message_status
    LANGUAGE sql STABLE
    AS $$
  SELECT m.id, m.channel, m.status, m.attempts, m.max_attempts, m.run_at, m.created_at,
         m.finished_at, m.expires_at, m.last_error_class, m.last_error_code, m.provider_message_id,
         m.outcome, m.outcome_type, m.outcome_code, m.outcome_at
$$;


--
-- Name: FUNCTION _message_status(m herald.messages); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._message_status(m herald.messages) IS 'Private: a message as its producer sees it (herald.status, status callbacks).';


--
-- Name: _messages_notify(); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._messages_notify() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  -- The test inline (herald._notify_clock_due is one inlined expression): most
  -- statements of a busy queue notify nobody and so make no nested call.
  IF herald._notify_clock_due(least(coalesce(pg_sequence_last_value('herald.notify_clock_queue'::regclass), 0),
                                    coalesce(pg_sequence_last_value('herald.notify_clock_log'::regclass), 0))) THEN
    PERFORM herald._notify(ARRAY['herald_queue', 'herald_log']);
  END IF;
  RETURN NULL;
END
$$;


--
-- Name: FUNCTION _messages_notify(); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._messages_notify() IS 'Private: the function of trigger _900_messages_notify.';


--
-- Name: _named_producer(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._named_producer(name text) RETURNS text
    LANGUAGE plpgsql STABLE
    AS $_$
BEGIN
  IF NOT pg_has_role(herald._caller(), 'herald_intake', 'MEMBER') THEN
    RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege', COLUMN = 'herald.producer',
      MESSAGE = 'herald.producer: only members of herald_intake may name the producer they serve';
  END IF;
  IF name !~ '^[A-Za-z0-9._-]{1,64}$' THEN
    PERFORM herald._reject(code => '22V12', field => 'herald.producer', message => 'must be 1 to 64 of A-Z a-z 0-9 . _ -');
  END IF;
  RETURN 'intake:' || name;
END
$_$;


--
-- Name: FUNCTION _named_producer(name text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._named_producer(name text) IS 'Private: intake:<name> for a producer named in herald.producer, checked against the caller''s role.';


--
-- Name: _nonempty_string(jsonb, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._nonempty_string(obj jsonb, key text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT coalesce(jsonb_typeof(obj -> key) = 'string' AND obj ->> key <> '', false)
$$;


--
-- Name: FUNCTION _nonempty_string(obj jsonb, key text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._nonempty_string(obj jsonb, key text) IS 'Private: true when a JSON object''s key holds a non-empty string.';


--
-- Name: _notify(text[]); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._notify(channels text[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
  ch text;
BEGIN
  FOREACH ch IN ARRAY channels LOOP
    CONTINUE WHEN NOT herald._notify_due(ch);
    PERFORM setval(CASE ch WHEN 'herald_queue' THEN 'herald.notify_clock_queue'::regclass
                           ELSE 'herald.notify_clock_log'::regclass END,
                   (date_part('epoch', clock_timestamp()) * 1000000)::bigint);
    PERFORM pg_notify(ch, '');
  END LOOP;
END
$$;


--
-- Name: FUNCTION _notify(channels text[]); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._notify(channels text[]) IS 'Private: NOTIFY the channels whose listeners may be waiting, and set their clocks.';


--
-- Name: _notify_clock_due(bigint); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._notify_clock_due(clock bigint) RETURNS boolean
    LANGUAGE sql
    AS $$
  SELECT coalesce(clock, 0)
           <= (date_part('epoch', clock_timestamp()) * 1000000)::bigint
              - coalesce(nullif(current_setting('herald.notify_interval_ms', true), '')::bigint, 50) * 1000
$$;


--
-- Name: FUNCTION _notify_clock_due(clock bigint); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._notify_clock_due(clock bigint) IS 'Private: true when a notify clock says a notification is due (inlined).';


--
-- Name: _notify_due(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._notify_due(channel text) RETURNS boolean
    LANGUAGE sql
    AS $$
  SELECT herald._notify_clock_due(pg_sequence_last_value(CASE channel WHEN 'herald_queue' THEN 'herald.notify_clock_queue'::regclass
                                                                      ELSE 'herald.notify_clock_log'::regclass END))
$$;


--
-- Name: FUNCTION _notify_due(channel text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._notify_due(channel text) IS 'Private: true when a notification channel is due a NOTIFY (inlined).';


--
-- Name: _outcome_rank(text, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._outcome_rank(outcome text, outcome_type text) RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT CASE
           WHEN outcome IN ('complained', 'unsubscribed') THEN 4
           WHEN outcome = 'undelivered' OR (outcome = 'bounced' AND outcome_type = 'hard') THEN 3
           WHEN outcome = 'delivered' THEN 2
           WHEN outcome IN ('deferred', 'bounced') THEN 1
           ELSE 0
         END
$$;


--
-- Name: FUNCTION _outcome_rank(outcome text, outcome_type text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._outcome_rank(outcome text, outcome_type text) IS 'Private: how grave a delivery outcome is (inlined).';


--
-- Name: _over_budget(timestamp with time zone, timestamp with time zone, interval, integer); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._over_budget(clear_at timestamp with time zone, now timestamp with time zone, budget_window interval, budget_limit integer) RETURNS interval
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT clear_at - now - budget_window / budget_limit * budget_limit
$$;


--
-- Name: FUNCTION _over_budget(clear_at timestamp with time zone, now timestamp with time zone, budget_window interval, budget_limit integer); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._over_budget(clear_at timestamp with time zone, now timestamp with time zone, budget_window interval, budget_limit integer) IS 'Private: how far a budget (a recipient''s, a number range''s, a producer''s) runs past its limit (above zero: over).';


--
-- Name: _own_message(bigint, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._own_message(id bigint, idempotency_key text) RETURNS bigint
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
  IF (_own_message.id IS NULL) = (_own_message.idempotency_key IS NULL) THEN
    PERFORM herald._reject(code => '22V12', field => CASE WHEN _own_message.id IS NULL THEN 'id' ELSE 'idempotency_key' END,
                           message => 'give either id or idempotency_key');
  END IF;
  IF _own_message.id IS NOT NULL THEN
    IF coalesce(current_setting('herald.producer', true), '') = ''
       AND pg_has_role(herald._caller(), 'herald_admin', 'MEMBER') THEN
      RETURN (SELECT m.id FROM herald.messages m WHERE m.id = _own_message.id);
    END IF;
    RETURN (SELECT m.id FROM herald.messages m WHERE m.id = _own_message.id AND m.producer = herald._producer());
  END IF;
  IF length(_own_message.idempotency_key) NOT BETWEEN 1 AND 255 THEN
    PERFORM herald._reject(code => '22V09', field => 'idempotency_key', message => 'must be 1 to 255 characters');
  END IF;
  RETURN (SELECT m.id FROM herald.messages m
          WHERE m.producer = herald._producer() AND m.idempotency_key = _own_message.idempotency_key);
END
$$;


--
-- Name: FUNCTION _own_message(id bigint, idempotency_key text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._own_message(id bigint, idempotency_key text) IS 'Private: the caller''s message by id or idempotency key (NULL: none of its own).';


--
-- Name: _payload_fields(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._payload_fields(kind text) RETURNS text[]
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT CASE kind
           WHEN 'email' THEN '{subject,text,html,body,from,reply_to,headers,cc,bcc,attachments,template_id,dynamic_template_data,categories,custom_args}'::text[]
           WHEN 'sms' THEN '{text,body,media_urls,content_sid,content_variables}'::text[]
         END
$$;


--
-- Name: FUNCTION _payload_fields(kind text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._payload_fields(kind text) IS 'Private: the payload fields a channel kind accepts (NULL: any).';


--
-- Name: _payload_problem(text, jsonb); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._payload_problem(kind text, payload jsonb) RETURNS text[]
    LANGUAGE plpgsql STABLE
    AS $_$
DECLARE
  k text;
  v jsonb;
  e jsonb;
  i integer;
  p text;
BEGIN
  IF NOT herald._shallow(value => payload) THEN
    RETURN ARRAY['payload', 'is nested more than 32 levels deep, more than JSON readers take'];
  END IF;
  IF kind = 'sms' THEN
    FOREACH k IN ARRAY ARRAY['text', 'body'] LOOP
      IF jsonb_typeof(payload -> k) NOT IN ('string', 'null') THEN
        RETURN ARRAY['payload.' || k, 'must be a string'];
      END IF;
    END LOOP;
  END IF;
  IF kind = 'sms' AND payload ?| '{content_sid,content_variables}'::text[] THEN
    IF jsonb_typeof(payload -> 'content_sid') IS DISTINCT FROM 'string' OR payload ->> 'content_sid' !~ '^HX[0-9a-fA-F]{32}$' THEN
      RETURN ARRAY['payload.content_sid', 'must be a Twilio Content template SID, HX and 32 hexadecimal digits (content_variables needs one)'];
    END IF;
    k := (SELECT min(f) FROM unnest('{text,body,media_urls}'::text[]) AS f WHERE payload ? f);
    IF k IS NOT NULL THEN
      RETURN ARRAY['payload.' || k, 'is not sent with content_sid: the template is the message'];
    END IF;
    v := payload -> 'content_variables';
    IF v IS NOT NULL AND (jsonb_typeof(v) <> 'object' OR (SELECT count(*) FROM jsonb_object_keys(v)) NOT BETWEEN 1 AND 100
                          OR v @? 'strict $.* ? (@.type() != "string")') THEN
      RETURN ARRAY['payload.content_variables', 'must be an object of 1 to 100 strings (the template''s placeholders)'];
    END IF;
  END IF;
  IF kind = 'sms' AND payload ? 'media_urls' THEN
    v := payload -> 'media_urls';
    IF jsonb_typeof(v) <> 'array' OR jsonb_array_length(v) NOT BETWEEN 1 AND 10 THEN
      RETURN ARRAY['payload.media_urls', 'must be an array of 1 to 10 URLs'];
    END IF;
    FOR i IN 0 .. jsonb_array_length(v) - 1 LOOP
      e := v -> i;
      IF jsonb_typeof(e) <> 'string' OR length(e #>> '{}') > 2048
         OR e #>> '{}' !~ ('^(?:' || herald._recipient_pattern(kind => 'webhook') || ')$') THEN
        RETURN ARRAY[format('payload.media_urls[%s]', i), 'must be an http(s) URL of at most 2048 characters'];
      END IF;
    END LOOP;
  END IF;
  IF kind <> 'email' THEN
    RETURN NULL;
  END IF;

  FOREACH k IN ARRAY ARRAY['subject', 'text', 'html', 'body'] LOOP
    IF jsonb_typeof(payload -> k) NOT IN ('string', 'null') THEN
      RETURN ARRAY['payload.' || k, 'must be a string'];
    END IF;
  END LOOP;
  IF coalesce(payload ->> 'subject' ~ '[\r\n]', false) THEN
    RETURN ARRAY['payload.subject', 'must be one line (no line breaks)'];
  END IF;
  FOREACH k IN ARRAY ARRAY['from', 'reply_to'] LOOP
    IF payload ? k AND (jsonb_typeof(payload -> k) <> 'string' OR length(payload ->> k) NOT BETWEEN 1 AND 320
                        OR herald._mailbox(value => payload ->> k) IS NULL) THEN
      RETURN ARRAY['payload.' || k, 'must be an address or a name and an address, Ana Lima <ana@example.com>, of 1 to 320 characters'];
    END IF;
  END LOOP;
  FOREACH k IN ARRAY ARRAY['cc', 'bcc'] LOOP
    CONTINUE WHEN NOT payload ? k;
    IF jsonb_typeof(payload -> k) <> 'array' OR jsonb_array_length(payload -> k) NOT BETWEEN 1 AND 50 THEN
      RETURN ARRAY['payload.' || k, 'must be an array of 1 to 50 e-mail addresses'];
    END IF;
    v := (SELECT a FROM jsonb_array_elements(payload -> k) AS a
          WHERE jsonb_typeof(a) <> 'string' OR NOT herald._email_address(recipient => a #>> '{}') LIMIT 1);
    IF v IS NOT NULL THEN -- the first that is no address, and why
      RETURN ARRAY['payload.' || k, CASE WHEN jsonb_typeof(v) = 'string' THEN (herald._address_problem(address => v #>> '{}'))[1]
                                         ELSE 'must be an array of 1 to 50 e-mail addresses' END];
    END IF;
  END LOOP;

  IF payload ? 'headers' THEN
    v := payload -> 'headers';
    IF jsonb_typeof(v) <> 'object' OR (SELECT count(*) FROM jsonb_object_keys(v)) > 50 THEN
      RETURN ARRAY['payload.headers', 'must be an object of at most 50 header names to strings'];
    END IF;
    FOR k, e IN SELECT h.key, h.value FROM jsonb_each(v) AS h ORDER BY h.key LOOP
      IF k !~ '^[!-9;-~]{1,76}$' OR lower(k) IN ('from', 'to', 'cc', 'bcc', 'subject', 'message-id', 'reply-to',
          'date', 'content-type', 'mime-version', 'content-transfer-encoding',
          'sender', 'resent-from', 'resent-sender', 'return-path') THEN
        RETURN ARRAY['payload.headers.' || k, 'is not a header a payload may set (printable ASCII without colon; not one herald sets, nor a sender''s identity)'];
      END IF;
      -- Providers' control headers (recipients, suppression bypass, another identity)
      -- and the trace and authentication headers of mail servers.
      IF lower(k) ~ ('^(x-smtpapi|received|received-spf|delivered-to|dkim-signature|domainkey-signature'
                     '|authentication-results|arc-[a-z-]+'
                     '|(x-sg|x-mc|x-mailgun|x-ses|x-msys|x-pm|x-mj|x-mailjet|x-mailin|x-ms-exchange)-.*)$') THEN
        RETURN ARRAY['payload.headers.' || k, 'is a provider''s control header or a mail server''s trace or authentication header, which only the provider or the servers set'];
      END IF;
      IF jsonb_typeof(e) <> 'string' OR length(k) + 2 + octet_length(e #>> '{}') > 998 OR e #>> '{}' ~ '[\r\n]' THEN
        RETURN ARRAY['payload.headers.' || k, 'must be a string on one line, within 998 bytes with its name and ": " (RFC 5322''s line limit)'];
      END IF;
    END LOOP;
  END IF;

  IF payload ? 'attachments' THEN
    v := payload -> 'attachments';
    IF jsonb_typeof(v) <> 'array' OR jsonb_array_length(v) NOT BETWEEN 1 AND 10 THEN
      RETURN ARRAY['payload.attachments', 'must be an array of 1 to 10 attachment objects'];
    END IF;
    FOR i IN 0 .. jsonb_array_length(v) - 1 LOOP
      e := v -> i;
      p := format('payload.attachments[%s]', i);
      IF jsonb_typeof(e) <> 'object' THEN
        RETURN ARRAY[p, 'must be an object {filename, content, content_type, disposition, content_id}'];
      END IF;
      k := (SELECT min(a) FROM jsonb_object_keys(e) AS a
            WHERE a NOT IN ('filename', 'content', 'content_type', 'disposition', 'content_id'));
      IF k IS NOT NULL THEN
        RETURN ARRAY[p || '.' || k, 'is not an attachment field (filename, content, content_type, disposition, content_id)'];
      END IF;
      IF jsonb_typeof(e -> 'filename') IS DISTINCT FROM 'string' OR length(e ->> 'filename') NOT BETWEEN 1 AND 255
         OR e ->> 'filename' ~ '[[:cntrl:]"\\/]' THEN
        RETURN ARRAY[p || '.filename', 'must be a name of 1 to 255 characters without control characters, quotes or slashes'];
      END IF;
      -- Executables from the company's own domain: malware with its reputation. The
      -- types Gmail refuses (support.google.com/mail/answer/6590); Windows drops
      -- trailing dots and spaces, so "invoice.exe." is an .exe.
      IF rtrim(lower(e ->> 'filename'), '. ') ~ ('\.(ade|adp|apk|appx|appxbundle|bat|cab|chm|cmd|com|cpl|diagcab|diagcfg|'
          || 'diagpkg|dll|dmg|ex_|exe|hta|img|ins|iso|isp|jar|jnlp|js|jse|lib|lnk|mde|msc|msi|msix|msixbundle|msp|mst|nsh|'
          || 'pif|ps1|scr|sct|shb|sys|vb|vbe|vbs|vhd|vxd|wsc|wsf|wsh|xll)$') THEN
        RETURN ARRAY[p || '.filename', 'is an executable type mail providers refuse (.exe, .js, .scr, …): link to the file instead'];
      END IF;
      IF jsonb_typeof(e -> 'content') IS DISTINCT FROM 'string' OR e ->> 'content' = ''
         OR NOT herald._base64(text => e ->> 'content') THEN
        RETURN ARRAY[p || '.content', 'must be non-empty base64 (RFC 4648)'];
      END IF;
      IF e ? 'content_type' AND (jsonb_typeof(e -> 'content_type') <> 'string'
         OR e ->> 'content_type' !~ '^[A-Za-z0-9!#$&^_.+-]{1,64}/[A-Za-z0-9!#$&^_.+-]{1,64}$') THEN
        RETURN ARRAY[p || '.content_type', 'must be a media type such as application/pdf'];
      END IF;
      IF e ? 'disposition' AND (e -> 'disposition') NOT IN ('"attachment"', '"inline"') THEN
        RETURN ARRAY[p || '.disposition', 'must be attachment or inline'];
      END IF;
      IF e ? 'content_id' AND (jsonb_typeof(e -> 'content_id') <> 'string' OR e ->> 'content_id' !~ '^[!-;=?-~]{1,128}$') THEN
        RETURN ARRAY[p || '.content_id', 'must be 1 to 128 printable characters without <, > or space'];
      END IF;
    END LOOP;
  END IF;

  IF payload ? 'template_id' AND (jsonb_typeof(payload -> 'template_id') <> 'string'
                                  OR payload ->> 'template_id' !~ '^d-[0-9a-f]{32}$') THEN
    RETURN ARRAY['payload.template_id', 'must be a dynamic template id, d- and 32 hexadecimal digits'];
  END IF;
  IF payload ? 'dynamic_template_data' AND (jsonb_typeof(payload -> 'dynamic_template_data') <> 'object'
                                            OR NOT payload ? 'template_id') THEN
    RETURN ARRAY['payload.dynamic_template_data', 'must be an object, given with template_id'];
  END IF;
  IF payload ? 'categories' THEN
    v := payload -> 'categories';
    IF jsonb_typeof(v) <> 'array' OR jsonb_array_length(v) NOT BETWEEN 1 AND 10
       OR EXISTS (SELECT FROM jsonb_array_elements(v) AS c
                  WHERE jsonb_typeof(c) <> 'string' OR length(c #>> '{}') NOT BETWEEN 1 AND 255 OR c #>> '{}' ~ '[[:cntrl:]]') THEN
      RETURN ARRAY['payload.categories', 'must be an array of 1 to 10 strings of 1 to 255 characters'];
    END IF;
  END IF;
  IF payload ? 'custom_args' THEN
    v := payload -> 'custom_args';
    IF jsonb_typeof(v) <> 'object' OR octet_length(v::text) >= 10000
       OR EXISTS (SELECT FROM jsonb_each(v) AS a WHERE jsonb_typeof(a.value) <> 'string') THEN
      RETURN ARRAY['payload.custom_args', 'must be an object of strings, under 10000 bytes'];
    END IF;
    IF v ? 'herald_id' THEN
      RETURN ARRAY['payload.custom_args.herald_id', 'is set by herald'];
    END IF;
  END IF;
  RETURN NULL;
END
$_$;


--
-- Name: FUNCTION _payload_problem(kind text, payload jsonb); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._payload_problem(kind text, payload jsonb) IS 'Private: the first problem of a payload''s optional fields as {field, message}, or NULL.';


--
-- Name: _person_key(text, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._person_key(kind text, recipient text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
  IF kind IS NULL OR kind NOT IN ('email', 'sms', 'webhook', 'custom') THEN
    PERFORM herald._reject('22V12', 'kind', format('%s is not a channel kind (email, sms, webhook, custom)',
                                                   coalesce(quote_literal(kind), 'NULL')));
  END IF;
  IF recipient IS NULL OR recipient = '' THEN
    PERFORM herald._reject('22V12', 'recipient', 'must be a non-empty string');
  END IF;
  RETURN herald._mailbox_key(kind => kind, recipient => recipient);
END
$$;


--
-- Name: FUNCTION _person_key(kind text, recipient text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._person_key(kind text, recipient text) IS 'Private: the checked mailbox of the person herald.forget or herald.subject_access is asked about.';


--
-- Name: _person_messages(text, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._person_messages(kind text, mailbox text) RETURNS TABLE(id bigint, role text)
    LANGUAGE sql STABLE
    AS $$
  SELECT m.id, 'to'
  FROM herald.messages m JOIN herald.channels c ON c.name = m.channel
  WHERE c.kind = _person_messages.kind AND herald._mailbox_key(kind => c.kind, recipient => m.recipient) = mailbox
  UNION ALL
  SELECT m.id, 'copy'
  FROM herald.messages m JOIN herald.channels c ON c.name = m.channel
  WHERE _person_messages.kind = 'email' AND c.kind = 'email' AND (m.payload ? 'cc' OR m.payload ? 'bcc')
    AND EXISTS (SELECT FROM jsonb_array_elements(coalesce(m.payload -> 'cc', '[]') || coalesce(m.payload -> 'bcc', '[]')) a
                WHERE herald._mailbox_key(kind => 'email', recipient => a #>> '{}') = mailbox)
$$;


--
-- Name: FUNCTION _person_messages(kind text, mailbox text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._person_messages(kind text, mailbox text) IS 'Private: the messages sent to a mailbox or copying it (herald.forget, herald.subject_access).';


--
-- Name: _producer(); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._producer() RETURNS text
    LANGUAGE sql STABLE
    AS $$
  SELECT CASE WHEN coalesce(current_setting('herald.producer', true), '') = '' THEN herald._caller()
              ELSE herald._named_producer(name => current_setting('herald.producer', true)) END
$$;


--
-- Name: FUNCTION _producer(); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._producer() IS 'Private: the producer of the current call (the role, or intake:<name> named by a herald_intake member).';


--
-- Name: _producer_bound(integer, integer); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._producer_bound(channel_bound integer, own_bound integer) RETURNS integer
    LANGUAGE sql IMMUTABLE
    RETURN CASE WHEN (channel_bound IS NOT NULL) THEN COALESCE(own_bound, channel_bound) ELSE NULL::integer END;


--
-- Name: FUNCTION _producer_bound(channel_bound integer, own_bound integer); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._producer_bound(channel_bound integer, own_bound integer) IS 'Private: a producer''s bound on its sends in flight on a channel (its own concurrency in place of the channel''s producer_concurrency).';


--
-- Name: _producers_callback_check(); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._producers_callback_check() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _producers_callback_check(); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._producers_callback_check() IS 'Private: the function of trigger producers_callbacks.';


--
-- Name: _punycode(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._punycode(label text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    AS $$
DECLARE
  cps integer[] := ARRAY(SELECT ascii(c) FROM regexp_split_to_table(label, '') AS c);
  output text := '';
  n bigint := 128;
  delta bigint := 0;
  bias bigint := 72;
  h integer;
  b integer;
  m bigint;
  q bigint;
  k bigint;
  t bigint;
  c integer;
  d bigint;
  first boolean;
BEGIN
  SELECT string_agg(chr(x), '' ORDER BY o), count(*) INTO output, b
  FROM unnest(cps) WITH ORDINALITY AS u (x, o) WHERE x < 128;
  output := coalesce(output, '');
  h := b;
  IF b > 0 THEN
    output := output || '-';
  END IF;
  WHILE h < cardinality(cps) LOOP
    m := (SELECT min(x) FROM unnest(cps) AS x WHERE x >= n);
    delta := delta + (m - n) * (h + 1);
    n := m;
    FOREACH c IN ARRAY cps LOOP
      IF c < n THEN
        delta := delta + 1;
      ELSIF c = n THEN
        q := delta;
        k := 36;
        LOOP
          t := CASE WHEN k <= bias THEN 1 WHEN k >= bias + 26 THEN 26 ELSE k - bias END;
          EXIT WHEN q < t;
          d := t + (q - t) % (36 - t);
          output := output || chr((CASE WHEN d < 26 THEN 97 + d ELSE 22 + d END)::integer);
          q := (q - t) / (36 - t);
          k := k + 36;
        END LOOP;
        output := output || chr((CASE WHEN q < 26 THEN 97 + q ELSE 22 + q END)::integer);
        -- adapt the bias (RFC 3492 §6.1)
        first := h = b;
        d := CASE WHEN first THEN delta / 700 ELSE delta / 2 END;
        d := d + d / (h + 1);
        k := 0;
        WHILE d > ((36 - 1) * 26) / 2 LOOP
          d := d / (36 - 1);
          k := k + 36;
        END LOOP;
        bias := k + ((36 - 1 + 1) * d) / (d + 38);
        delta := 0;
        h := h + 1;
      END IF;
    END LOOP;
    delta := delta + 1;
    n := n + 1;
  END LOOP;
  RETURN output;
END
$$;


--
-- Name: FUNCTION _punycode(label text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._punycode(label text) IS 'Private: the RFC 3492 Punycode of a domain label (for the ASCII form an error suggests).';


--
-- Name: _quiet(time without time zone, time without time zone, smallint[], text, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._quiet(quiet_from time without time zone, quiet_until time without time zone, quiet_days smallint[], quiet_zone text, now timestamp with time zone) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
  SELECT quiet_from IS NOT NULL
         AND CASE WHEN quiet_from < quiet_until
                  THEN (now AT TIME ZONE quiet_zone)::time >= quiet_from AND (now AT TIME ZONE quiet_zone)::time < quiet_until
                  ELSE (now AT TIME ZONE quiet_zone)::time >= quiet_from OR (now AT TIME ZONE quiet_zone)::time < quiet_until
             END
      OR quiet_days IS NOT NULL AND extract(isodow FROM now AT TIME ZONE quiet_zone)::smallint = ANY (quiet_days)
$$;


--
-- Name: FUNCTION _quiet(quiet_from time without time zone, quiet_until time without time zone, quiet_days smallint[], quiet_zone text, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._quiet(quiet_from time without time zone, quiet_until time without time zone, quiet_days smallint[], quiet_zone text, now timestamp with time zone) IS 'Private: whether a time falls in a channel''s quiet hours or days (inlined).';


--
-- Name: _quiet_end(time without time zone, time without time zone, smallint[], text, timestamp with time zone, text, boolean); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._quiet_end(quiet_from time without time zone, quiet_until time without time zone, quiet_days smallint[], quiet_zone text, at timestamp with time zone, recipient_zone text DEFAULT NULL::text, zone_known boolean DEFAULT false) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
  v_zone text := CASE WHEN herald._time_zone(name => recipient_zone) THEN recipient_zone
                      WHEN zone_known OR herald._time_zone(name => quiet_zone) THEN quiet_zone END;
  v_at timestamptz := at;
  v_local timestamp;
BEGIN
  IF v_zone IS NULL THEN
    RETURN NULL;
  END IF;
  -- At most six quiet days and the hours around them: a few steps reach the end.
  FOR i IN 1 .. 16 LOOP
    IF NOT herald._quiet(quiet_from => quiet_from, quiet_until => quiet_until, quiet_days => quiet_days,
                         quiet_zone => v_zone, now => v_at) THEN
      RETURN v_at;
    END IF;
    v_local := v_at AT TIME ZONE v_zone;
    IF quiet_days IS NOT NULL AND extract(isodow FROM v_local)::smallint = ANY (quiet_days) THEN
      v_at := (v_local::date + 1)::timestamp AT TIME ZONE v_zone;
    ELSE
      v_at := (v_local::date + CASE WHEN quiet_from > quiet_until AND v_local::time >= quiet_from THEN 1 ELSE 0 END
               + quiet_until) AT TIME ZONE v_zone;
    END IF;
  END LOOP;
  RETURN v_at;
END
$$;


--
-- Name: FUNCTION _quiet_end(quiet_from time without time zone, quiet_until time without time zone, quiet_days smallint[], quiet_zone text, at timestamp with time zone, recipient_zone text, zone_known boolean); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._quiet_end(quiet_from time without time zone, quiet_until time without time zone, quiet_days smallint[], quiet_zone text, at timestamp with time zone, recipient_zone text, zone_known boolean) IS 'Private: when the quiet time a time falls in ends (the time itself outside it; NULL when no zone is known).';


--
-- Name: channels; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.channels (
    name text NOT NULL,
    kind text NOT NULL,
    max_attempts integer DEFAULT 5 NOT NULL,
    backoff_base interval DEFAULT '00:00:10'::interval NOT NULL,
    backoff_max interval DEFAULT '01:00:00'::interval NOT NULL,
    lease interval DEFAULT '00:00:30'::interval NOT NULL,
    max_payload_bytes integer DEFAULT 65536 NOT NULL,
    ttl interval DEFAULT '5 days'::interval NOT NULL,
    rate double precision,
    burst integer,
    paused boolean DEFAULT false NOT NULL,
    paused_reason text,
    paused_at timestamp with time zone,
    paused_by text,
    paused_until timestamp with time zone,
    resumed_at timestamp with time zone,
    pause_relapses integer DEFAULT 0 NOT NULL,
    quota_wait interval DEFAULT '01:00:00'::interval NOT NULL,
    producers text[],
    recipient_prefixes text[],
    recipient_limit integer,
    recipient_window interval DEFAULT '01:00:00'::interval NOT NULL,
    range_limit integer,
    range_window interval DEFAULT '01:00:00'::interval NOT NULL,
    range_digits smallint DEFAULT 7 NOT NULL,
    budget_wait interval DEFAULT '00:00:02'::interval NOT NULL,
    quiet_from time without time zone,
    quiet_until time without time zone,
    quiet_days smallint[],
    quiet_zone text DEFAULT 'UTC'::text NOT NULL,
    quiet_per_recipient boolean DEFAULT false NOT NULL,
    fallback text,
    max_segments integer DEFAULT 10,
    max_recipients integer DEFAULT 50 NOT NULL,
    producer_concurrency integer,
    CONSTRAINT channels_backoff_positive CHECK (((backoff_base > '00:00:00'::interval) AND (backoff_max >= backoff_base))),
    CONSTRAINT channels_budget_wait_range CHECK (((budget_wait >= '00:00:00.001'::interval) AND (budget_wait <= '00:01:00'::interval))),
    CONSTRAINT channels_burst_positive CHECK (((burst >= 1) AND (burst <= 1000000))),
    CONSTRAINT channels_fallback_not_webhook CHECK (((fallback IS NULL) OR (kind <> 'webhook'::text))),
    CONSTRAINT channels_fallback_other CHECK ((fallback <> name)),
    CONSTRAINT channels_kind_known CHECK ((kind = ANY (ARRAY['email'::text, 'sms'::text, 'webhook'::text, 'custom'::text]))),
    CONSTRAINT channels_lease_range CHECK (((lease >= '00:00:01'::interval) AND (lease <= '1 day'::interval))),
    CONSTRAINT channels_max_attempts_range CHECK (((max_attempts >= 1) AND (max_attempts <= 100))),
    CONSTRAINT channels_max_payload_range CHECK (((max_payload_bytes >= 64) AND (max_payload_bytes <= 1048576))),
    CONSTRAINT channels_max_recipients_range CHECK (((max_recipients >= 1) AND (max_recipients <= 101))),
    CONSTRAINT channels_max_segments_range CHECK (((max_segments >= 1) AND (max_segments <= 50))),
    CONSTRAINT channels_name_format CHECK ((name ~ '^[a-z][a-z0-9_]{0,31}$'::text)),
    CONSTRAINT channels_paused_by_known CHECK ((paused_by = ANY (ARRAY['operator'::text, 'runner'::text]))),
    CONSTRAINT channels_paused_until_runner CHECK (((paused_until IS NULL) OR (paused AND (paused_by = 'runner'::text)))),
    CONSTRAINT channels_producer_concurrency_range CHECK (((producer_concurrency >= 1) AND (producer_concurrency <= 100000))),
    CONSTRAINT channels_producers_listed CHECK ((((cardinality(producers) >= 1) AND (cardinality(producers) <= 1000)) AND (array_position(producers, NULL::text) IS NULL))),
    CONSTRAINT channels_quiet_days_listed CHECK ((((cardinality(quiet_days) >= 1) AND (cardinality(quiet_days) <= 6)) AND (quiet_days <@ '{1,2,3,4,5,6,7}'::smallint[]))),
    CONSTRAINT channels_quiet_hours_whole CHECK ((((quiet_from IS NULL) = (quiet_until IS NULL)) AND (quiet_from <> quiet_until))),
    CONSTRAINT channels_quiet_per_recipient_hours CHECK (((NOT quiet_per_recipient) OR (quiet_from IS NOT NULL) OR (quiet_days IS NOT NULL))),
    CONSTRAINT channels_quota_wait_range CHECK (((quota_wait >= '00:00:01'::interval) AND (quota_wait <= '1 day'::interval))),
    CONSTRAINT channels_range_digits_range CHECK (((range_digits >= 2) AND (range_digits <= 14))),
    CONSTRAINT channels_range_limit_kind CHECK (((range_limit IS NULL) OR (((range_limit >= 1) AND (range_limit <= 1000000)) AND (kind = ANY (ARRAY['sms'::text, 'webhook'::text]))))),
    CONSTRAINT channels_range_window_range CHECK (((range_window >= '00:00:01'::interval) AND (range_window <= '7 days'::interval))),
    CONSTRAINT channels_rate_positive CHECK (((rate > (0)::double precision) AND (rate <= (1000000)::double precision))),
    CONSTRAINT channels_recipient_limit_range CHECK (((recipient_limit >= 1) AND (recipient_limit <= 1000000))),
    CONSTRAINT channels_recipient_prefixes_form CHECK (((recipient_prefixes IS NULL) OR (((cardinality(recipient_prefixes) >= 1) AND (cardinality(recipient_prefixes) <= 1000)) AND (array_position(recipient_prefixes, NULL::text) IS NULL) AND
CASE kind
    WHEN 'sms'::text THEN (array_to_string(recipient_prefixes, ' '::text) ~ '^\+[1-9][0-9]{0,14}( \+[1-9][0-9]{0,14})*$'::text)
    WHEN 'webhook'::text THEN (array_to_string(recipient_prefixes, ' '::text) ~ '^https?://[a-z0-9.-]+(:[0-9]{1,5})?/[^ ]*( https?://[a-z0-9.-]+(:[0-9]{1,5})?/[^ ]*)*$'::text)
    ELSE false
END))),
    CONSTRAINT channels_recipient_window_range CHECK (((recipient_window >= '00:00:01'::interval) AND (recipient_window <= '7 days'::interval))),
    CONSTRAINT channels_ttl_range CHECK (((ttl >= '00:00:01'::interval) AND (ttl <= '1 year'::interval)))
)
WITH (autovacuum_analyze_threshold='0', autovacuum_analyze_scale_factor='0');


--
-- Name: TABLE channels; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.channels IS 'Per-channel delivery policy: validation kind, attempts, backoff, lease, payload limit, pause switch.';


--
-- Name: COLUMN channels.ttl; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.ttl IS 'Time-to-live of a message once due: not sent by run_at + ttl, it ends expired (a producer''s expires_at may only shorten it).';


--
-- Name: COLUMN channels.rate; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.rate IS 'Messages per second all runners together may claim (claim_batch enforces it, herald.rate_buckets); NULL: no limit.';


--
-- Name: COLUMN channels.burst; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.burst IS 'How many messages the rate lets out at once after a quiet spell; NULL: one second''s worth (at least 1).';


--
-- Name: COLUMN channels.paused; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.paused IS 'A paused channel still accepts messages; claim_batch hands none of them out.';


--
-- Name: COLUMN channels.paused_reason; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.paused_reason IS 'Why the channel is paused, for operators (the console shows it); set with paused.';


--
-- Name: COLUMN channels.paused_at; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.paused_at IS 'When the channel was paused; set with paused.';


--
-- Name: COLUMN channels.paused_by; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.paused_by IS 'operator (herald.pause_channel; only an operator resumes) or runner (a configuration or quota failure; a runner''s probe may resume).';


--
-- Name: COLUMN channels.paused_until; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.paused_until IS 'A runner''s pause for a spent quota or a relapse: no runner resumes the channel before then; NULL: as soon as a probe passes.';


--
-- Name: COLUMN channels.resumed_at; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.resumed_at IS 'When a runner''s probe last resumed the channel; a runner''s pause within backoff_max of it is a relapse.';


--
-- Name: COLUMN channels.pause_relapses; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.pause_relapses IS 'Runner pauses in a row that came within backoff_max of a probe''s resume (a fault the probe does not see): each waits twice as long (backoff_base * 2^n, at most backoff_max).';


--
-- Name: COLUMN channels.quota_wait; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.quota_wait IS 'How long the channel pauses when its provider says the account''s sending quota is spent (herald.fail class quota without retry_at).';


--
-- Name: COLUMN channels.producers; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.producers IS 'The producers that may enqueue on the channel (role names, intake:<name>); NULL: every producer. What a webhook receiver of the channel trusts.';


--
-- Name: COLUMN channels.recipient_prefixes; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.recipient_prefixes IS 'Where the channel may send: an sms recipient must start with one of these E.164 prefixes, a webhook URL with one of these URL prefixes (each up to a ''/'' after the host); NULL: anywhere. Checked at enqueue.';


--
-- Name: COLUMN channels.recipient_limit; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.recipient_limit IS 'Most messages one recipient may be sent on the channel per recipient_window, from all producers together (herald.recipient_buckets): at once, then one per recipient_window / recipient_limit; past it enqueue refuses (53400 recipient). NULL: no limit.';


--
-- Name: COLUMN channels.recipient_window; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.recipient_window IS 'The span recipient_limit counts over: a recipient''s budget refills recipient_limit messages per recipient_window.';


--
-- Name: COLUMN channels.range_limit; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.range_limit IS 'sms: most messages all numbers of one range (the same first range_digits digits) may be sent per range_window, against SMS pumping through many numbers of one range; webhook: all URLs of one site (the host''s registrable domain by the Public Suffix List, herald._site; an IP address whole), against webhooks aimed at a third party; from all producers together; past it enqueue refuses (53400 recipient). NULL: no limit.';


--
-- Name: COLUMN channels.range_window; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.range_window IS 'The span range_limit counts over.';


--
-- Name: COLUMN channels.range_digits; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.range_digits IS 'How many digits after the + make a number range for range_limit (7: +8801712, +1415555).';


--
-- Name: COLUMN channels.budget_wait; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.budget_wait IS 'Longest an enqueue waits for a recipient''s or range''s budget (recipient_limit, range_limit) held by another transaction that has not committed; past it enqueue refuses (55P03 recipient) instead of waiting for that transaction to end.';


--
-- Name: COLUMN channels.quiet_from; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.quiet_from IS 'Quiet hours: from this local time (in quiet_zone) to quiet_until (and all of quiet_days), claim_batch hands out none of the channel''s messages (they wait, and may expire); NULL: none.';


--
-- Name: COLUMN channels.quiet_until; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.quiet_until IS 'The end of the quiet hours (before quiet_from: they span midnight).';


--
-- Name: COLUMN channels.quiet_days; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.quiet_days IS 'Days of the week that are quiet all day, ISO numbers in the quiet zone''s local time (7: Sunday; 6 and 7: the weekend), as quiet_from..quiet_until are quiet every day; NULL: none.';


--
-- Name: COLUMN channels.quiet_zone; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.quiet_zone IS 'The IANA time zone of the quiet hours (Europe/Berlin, America/New_York); with quiet_per_recipient, that of messages naming none.';


--
-- Name: COLUMN channels.quiet_per_recipient; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.quiet_per_recipient IS 'The quiet hours are each recipient''s local time (the message''s recipient_zone, else quiet_zone): a message is stored due at their end, and claim_batch moves one found in them to their end instead of handing it out. Needs quiet_from or quiet_days.';


--
-- Name: COLUMN channels.fallback; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.fallback IS 'A channel of the same kind (another provider or account) that sends this channel''s due messages while a runner has paused it (provider down, configuration, spent quota; not an operator''s pause): claim_batch moves them to the fallback as it claims them (a rerouted log event). NULL: they wait.';


--
-- Name: COLUMN channels.max_segments; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.max_segments IS 'sms: the most segments (each one billed) a text may take, counted as carriers do (GSM-7 153 characters a segment, else UCS-2 67); past it enqueue refuses (22V03 payload.text). Texts with media_urls go as MMS and are not counted. NULL: up to 1600 characters; other kinds ignore it.';


--
-- Name: COLUMN channels.max_recipients; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.max_recipients IS 'email: the most addresses one message may go to, its recipient, cc and bcc together (Amazon SES, Postmark and Resend take 50; the SMTP standard has servers take at least 100); past it enqueue refuses (22V03 payload.cc or payload.bcc). Other kinds ignore it.';


--
-- Name: COLUMN channels.producer_concurrency; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.channels.producer_concurrency IS 'Most messages of one producer being sent (processing) on the channel at once, by all runners together: claim_batch hands out no more of its messages until some are reported, so one producer''s slow receivers cannot take every send slot. NULL: no bound.';


--
-- Name: _range_key(herald.channels, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._range_key(channel herald.channels, recipient text) RETURNS text
    LANGUAGE sql STABLE
    AS $$
  SELECT CASE (channel).kind
           WHEN 'sms' THEN 'range:' || left(recipient, 1 + (channel).range_digits)
           WHEN 'webhook' THEN 'site:' || herald._site(host => herald._url_host(url => recipient))
         END
$$;


--
-- Name: FUNCTION _range_key(channel herald.channels, recipient text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._range_key(channel herald.channels, recipient text) IS 'Private: the number range of an SMS recipient, or the site of a webhook URL, as herald.recipient_buckets keys it.';


--
-- Name: _ready(text[], integer[], integer[], integer, bigint, integer, text[], integer[], timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._ready(channels text[], slots integer[], caps integer[], n integer, turn bigint, from_priority integer, bounded text[], bounds integer[], now timestamp with time zone) RETURNS TABLE(id bigint, channel text, recipient text, priority smallint, run_at timestamp with time zone)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  v_left integer := _ready.n;
  v_caps integer[] := _ready.caps;
  v_priority integer := _ready.from_priority - 1;
  v_due integer[]; -- {channel position, hashtext(producer)} of each due producer
  v_k integer := cardinality(_ready.channels);
  v_i integer;
  v_want integer;    -- what channels[v_i] may give
  v_got integer;     -- what it gave
  v_producers integer[]; -- its due producers (hashtext), in turn order
  v_open integer[];  -- those (positions) that filled their last share
  v_next integer[];
  v_gave integer[]; -- what each producer gave so far
  v_share integer;
  v_took integer;
  v_p integer;
  v_bound integer;  -- channels[v_i]'s producer_concurrency
  v_room_keys text[] := '{}'; -- '<channel position>/<producer hash>' of each bounded producer seen
  v_rooms integer[] := '{}';  -- what each may still be given: the bound less its messages
                              -- being sent and what this claim gave it
  v_room_at integer[]; -- each of v_producers' place in v_rooms
  v_counted integer[] := '{}'; -- the bounded channels (positions) counted
  v_at integer;
  v_locked boolean := false; -- the bounded channels' advisory locks taken
  v_own_hashes integer[]; -- hashtext of the producers with a concurrency of their own
  v_own_bounds integer[];
BEGIN
  LOOP
    -- The next queued priority in which a channel with tokens left has a due message,
    -- and those channels: one statement walks the priorities in between (a priority
    -- that holds only scheduled messages costs a probe per channel and producer, not a
    -- scan).
    WITH RECURSIVE walk (p, due) AS (
      SELECT v_priority, '{}'::integer[]
      UNION ALL
      SELECT n.p, ARRAY(SELECT ARRAY[c.i::integer, d.h]
                        FROM unnest(_ready.channels, _ready.slots) WITH ORDINALITY AS c (name, slot, i)
                        CROSS JOIN LATERAL (
                          -- The channel's producers: a probe of the index per producer
                          -- with queued messages in the priority (its earliest entry
                          -- says whether it is due), and one more.
                          WITH RECURSIVE producer (h, due) AS (
                            (SELECT hashtext(m.producer), m.run_at <= _ready.now
                             FROM herald.messages m
                             WHERE m.status = 'queued' AND m.priority = n.p
                               AND hashtext(m.channel) = hashtext(c.name) AND m.channel = c.name
                             ORDER BY hashtext(m.producer), m.run_at
                             LIMIT 1)
                            UNION ALL
                            SELECT x.h, x.due
                            FROM producer q
                            CROSS JOIN LATERAL (
                              SELECT hashtext(m.producer) AS h, m.run_at <= _ready.now AS due
                              FROM herald.messages m
                              WHERE m.status = 'queued' AND m.priority = n.p
                                AND hashtext(m.channel) = hashtext(c.name) AND m.channel = c.name
                                AND hashtext(m.producer) > q.h
                              ORDER BY hashtext(m.producer), m.run_at
                              LIMIT 1) AS x
                          )
                          SELECT producer.h FROM producer WHERE producer.due) AS d
                        WHERE v_caps[c.slot] >= 1
                        ORDER BY c.i, d.h)
      FROM walk w
      CROSS JOIN LATERAL (SELECT min(m.priority) AS p FROM herald.messages m
                          WHERE m.status = 'queued' AND m.priority > w.p) AS n
      WHERE cardinality(w.due) = 0 AND n.p IS NOT NULL
    )
    SELECT w.p, w.due INTO v_priority, v_due FROM walk w WHERE cardinality(w.due) > 0 LIMIT 1;
    EXIT WHEN v_priority IS NULL;
    FOR t IN 0 .. v_k - 1 LOOP
      v_i := ((_ready.turn % v_k)::integer + t) % v_k + 1;
      v_want := least(v_left, v_caps[_ready.slots[v_i]]);
      CONTINUE WHEN v_want < 1;
      v_producers := ARRAY(SELECT v_due[d][2] FROM generate_subscripts(v_due, 1) AS d WHERE v_due[d][1] = v_i);
      v_p := cardinality(v_producers);
      CONTINUE WHEN v_p = 0;
      v_producers := v_producers[(_ready.turn % v_p)::integer + 1 :] || v_producers[: (_ready.turn % v_p)::integer];
      v_bound := _ready.bounds[array_position(_ready.bounded, _ready.channels[v_i])];
      IF v_bound IS NULL THEN
        v_open := ARRAY(SELECT generate_series(1, v_p));
      ELSE
        -- Each producer's room: its messages being sent on the channel counted once
        -- per claim (its range of messages_in_flight_idx), less what the claim gave it.
        IF NOT v_locked THEN
          -- One claim at a time counts and takes the bounded channels' messages: at
          -- the first it visits, it locks them all, in hash order (no deadlock).
          PERFORM pg_advisory_xact_lock(1213612877, b.h)
          FROM (SELECT hashtext(x) AS h FROM unnest(_ready.bounded) AS x ORDER BY 1) AS b;
          v_locked := true;
          SELECT array_agg(hashtext(p.producer)), array_agg(p.concurrency) INTO v_own_hashes, v_own_bounds
          FROM herald.producers p
          WHERE p.concurrency IS NOT NULL;
        END IF;
        IF NOT v_i = ANY (v_counted) THEN
          v_counted := v_counted || v_i;
          SELECT v_room_keys || coalesce(array_agg(v_i || '/' || k.h), '{}'),
                 v_rooms || coalesce(array_agg(herald._producer_bound(v_bound, v_own_bounds[array_position(v_own_hashes, k.h)]) - k.n), '{}')
          INTO v_room_keys, v_rooms
          FROM (SELECT hashtext(m.producer) AS h, count(*)::integer AS n
                FROM herald.messages m
                WHERE m.status = 'processing' AND m.channel = _ready.channels[v_i]
                GROUP BY 1) AS k;
        END IF;
        v_room_at := '{}';
        FOR q IN 1 .. v_p LOOP
          v_at := array_position(v_room_keys, v_i || '/' || v_producers[q]);
          IF v_at IS NULL THEN -- none being sent
            v_room_keys := v_room_keys || (v_i || '/' || v_producers[q]);
            v_rooms := v_rooms || herald._producer_bound(v_bound, v_own_bounds[array_position(v_own_hashes, v_producers[q])]);
            v_at := cardinality(v_rooms);
          END IF;
          v_room_at := v_room_at || v_at;
        END LOOP;
        v_open := ARRAY(SELECT q FROM generate_series(1, v_p) AS q WHERE v_rooms[v_room_at[q]] > 0);
      END IF;
      v_gave := array_fill(0, ARRAY[v_p]);
      v_got := 0;
      -- Rounds: each open producer takes its share of what is left (more than an
      -- equal one when those before it had fewer); one that filled its share stays
      -- open for the next round, which passes over the rows it gave (OFFSET: they
      -- are locked by this claim, so SKIP LOCKED keeps them). Should the rows before
      -- them change in between (a claim rolled back, an earlier run_at committed), a
      -- row may come twice or one be locked and not returned: claim_batch takes each
      -- id once, and the rest stays queued.
      WHILE cardinality(v_open) > 0 AND v_got < v_want LOOP
        v_next := '{}';
        FOR j IN 1 .. cardinality(v_open) LOOP
          EXIT WHEN v_got = v_want;
          v_share := ceil((v_want - v_got)::numeric / (cardinality(v_open) - j + 1));
          IF v_bound IS NOT NULL THEN
            v_share := least(v_share, v_rooms[v_room_at[v_open[j]]] - v_gave[v_open[j]]);
          END IF;
          -- OFFSET outside: the scan's plan is the one a LIMIT alone gets (with an
          -- OFFSET parameter, the generic plan's guess of it can prefer a sort).
          RETURN QUERY
            SELECT s.id, s.channel, s.recipient, s.priority, s.run_at
            FROM (
              SELECT m.id, m.channel, m.recipient, m.priority, m.run_at
              FROM herald.messages m
              WHERE m.status = 'queued'
                AND m.priority = v_priority
                AND hashtext(m.channel) = hashtext(_ready.channels[v_i]) -- the index's stand-in for the name
                AND m.channel = _ready.channels[v_i]
                AND hashtext(m.producer) = v_producers[v_open[j]]
                AND m.run_at <= _ready.now
                AND m.expires_at > _ready.now
                -- Held messages are not in the index; this check covers the few a race
                -- left queued behind an earlier pending message of their key.
                AND (m.ordering_key IS NULL OR NOT EXISTS (
                      SELECT 1 FROM herald.messages e
                      WHERE e.producer = m.producer
                        AND e.ordering_key = m.ordering_key
                        AND e.id < m.id
                        AND e.finished_at IS NULL))
              ORDER BY m.run_at, m.id
              LIMIT v_gave[v_open[j]] + v_share
              FOR NO KEY UPDATE SKIP LOCKED) AS s
            OFFSET v_gave[v_open[j]];
          GET DIAGNOSTICS v_took = ROW_COUNT;
          v_gave[v_open[j]] := v_gave[v_open[j]] + v_took;
          IF v_took = v_share AND (v_bound IS NULL OR v_gave[v_open[j]] < v_rooms[v_room_at[v_open[j]]]) THEN
            v_next := v_next || v_open[j];
          END IF;
          v_got := v_got + v_took;
        END LOOP;
        v_open := v_next;
      END LOOP;
      IF v_bound IS NOT NULL THEN
        FOR q IN 1 .. v_p LOOP
          v_rooms[v_room_at[q]] := v_rooms[v_room_at[q]] - v_gave[q];
        END LOOP;
      END IF;
      v_left := v_left - v_got;
      v_caps[_ready.slots[v_i]] := v_caps[_ready.slots[v_i]] - v_got;
      IF v_left = 0 THEN
        RETURN;
      END IF;
    END LOOP;
  END LOOP;
END
$$;


--
-- Name: FUNCTION _ready(channels text[], slots integer[], caps integer[], n integer, turn bigint, from_priority integer, bounded text[], bounds integer[], now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._ready(channels text[], slots integer[], caps integer[], n integer, turn bigint, from_priority integer, bounded text[], bounds integer[], now timestamp with time zone) IS 'Private: lock the next ready messages for claim_batch, priority by priority, channels and their producers in turns (FOR NO KEY UPDATE SKIP LOCKED).';


--
-- Name: _recipient_list_kind(text, integer); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._recipient_list_kind(list text, n integer) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $_$
  SELECT CASE
           WHEN octet_length(list) - octet_length(replace(list, E'\n', '')) IS DISTINCT FROM n - 1 THEN NULL
           WHEN list ~ ('^(?:' || herald._recipient_pattern('email') || ')(?:\n(?:' || herald._recipient_pattern('email') || '))*$') THEN 'email'
           WHEN list ~ ('^(?:' || herald._recipient_pattern('sms') || ')(?:\n(?:' || herald._recipient_pattern('sms') || '))*$') THEN 'sms'
           WHEN list ~ ('^(?:' || herald._recipient_pattern('webhook') || ')(?:\n(?:' || herald._recipient_pattern('webhook') || '))*$') THEN 'webhook'
         END
$_$;


--
-- Name: FUNCTION _recipient_list_kind(list text, n integer); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._recipient_list_kind(list text, n integer) IS 'Private: the channel kind whose syntax every recipient of a newline-joined list matches.';


--
-- Name: _recipient_pattern(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._recipient_pattern(kind text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $_$
  SELECT CASE kind
           WHEN 'email' THEN '[A-Za-z0-9!#$%&''*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&''*+/=?^_`{|}~-]+)*@[A-Za-z0-9]+((\.|-+)[A-Za-z0-9]+)*'
           WHEN 'sms' THEN '\+[1-9][0-9]{6,14}'
           WHEN 'webhook' THEN 'https?://([^\s/?#@]*@)?(\[[^\s/?#\]]*\]|[^\s/?#:\[\]@]+)'
                               '(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?([/?#]\S*)?'
         END
$_$;


--
-- Name: FUNCTION _recipient_pattern(kind text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._recipient_pattern(kind text) IS 'Private: the regular expression of a recipient of a channel kind.';


--
-- Name: _refuse_clock(timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._refuse_clock(now timestamp with time zone) RETURNS boolean
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
  IF now IS NULL THEN
    PERFORM herald._reject(code => '22V12', field => 'now', message => 'must not be NULL',
                           hint => 'leave it out: the database clock is used');
  END IF;
  IF now <> pg_catalog.now() AND NOT pg_has_role(herald._caller(), 'herald_admin', 'MEMBER') THEN
    RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege', COLUMN = 'now',
      MESSAGE = 'now: only herald_admin may pass a clock', HINT = 'leave it out: the database clock is used';
  END IF;
  RETURN true;
END
$$;


--
-- Name: FUNCTION _refuse_clock(now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._refuse_clock(now timestamp with time zone) IS 'Private: refuse a NULL clock, and any clock but now() from roles below herald_admin.';


--
-- Name: _refused_address(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._refused_address(url text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    AS $_$
DECLARE
  v_authority text := substring(url from '^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)');
  v_host text;
  v_addr inet;
BEGIN
  IF v_authority IS NULL THEN
    RETURN NULL;
  ELSIF strpos(v_authority, '@') > 0 THEN
    RETURN 'carries user info (user:password@); give the receiver its credentials another way';
  END IF;
  v_host := coalesce(substring(v_authority from '^\[([^]]*)\]'), substring(v_authority from '^([^:]*)'));
  IF v_host !~ ':' AND v_host !~* '^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+))*\.?$' THEN
    RETURN NULL; -- a host name
  END IF;
  IF v_host !~ ':' AND v_host !~ '^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$' THEN
    RETURN format('has the host %s, an IP address not in dotted-quad form', v_host);
  END IF;
  BEGIN
    v_addr := v_host::inet;
  EXCEPTION WHEN invalid_text_representation THEN
    RETURN format('has the host [%s], which is not an IPv6 address', v_host);
  END;
  RETURN (SELECT format('has the host %s, a %s address', v_host, n.reason)
          FROM herald._refused_networks() AS n WHERE n.network >>= v_addr LIMIT 1);
END
$_$;


--
-- Name: FUNCTION _refused_address(url text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._refused_address(url text) IS 'Private: why a webhook URL is refused at enqueue (user info, a literal refused address), or NULL.';


--
-- Name: _refused_networks(); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._refused_networks() RETURNS TABLE(network cidr, reason text)
    LANGUAGE sql IMMUTABLE
    AS $$
  VALUES
    ('0.0.0.0/8'::cidr, 'unspecified'),
    ('10.0.0.0/8'::cidr, 'private'),
    ('100.64.0.0/10'::cidr, 'carrier-grade NAT'),
    ('127.0.0.0/8'::cidr, 'loopback'),
    ('169.254.0.0/16'::cidr, 'link-local'),
    ('172.16.0.0/12'::cidr, 'private'),
    ('192.0.0.0/24'::cidr, 'reserved'),
    ('192.168.0.0/16'::cidr, 'private'),
    ('198.18.0.0/15'::cidr, 'reserved'),
    ('224.0.0.0/4'::cidr, 'multicast'),
    ('240.0.0.0/4'::cidr, 'reserved or broadcast'),
    ('::/128'::cidr, 'unspecified'),
    ('::1/128'::cidr, 'loopback'),
    ('::/96'::cidr, 'IPv4-compatible'),
    ('::ffff:0:0/96'::cidr, 'IPv4-mapped'),
    ('64:ff9b::/96'::cidr, 'NAT64'),
    ('64:ff9b:1::/48'::cidr, 'NAT64'),
    ('2001::/32'::cidr, 'Teredo'),
    ('2002::/16'::cidr, '6to4'),
    ('fc00::/7'::cidr, 'unique-local'),
    ('fe80::/10'::cidr, 'link-local'),
    ('ff00::/8'::cidr, 'multicast')
$$;


--
-- Name: FUNCTION _refused_networks(); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._refused_networks() IS 'Private: networks webhooks may not reach by default (loopback, private, link-local, ...), with the reason.';


--
-- Name: _reject(text, text, text, text, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._reject(code text, field text, message text, detail text DEFAULT NULL::text, hint text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  -- RAISE refuses NULL options, so the optional DETAIL and HINT need their own branches.
  IF detail IS NULL AND hint IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = code, COLUMN = field, MESSAGE = field || ': ' || message;
  ELSIF detail IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = code, COLUMN = field, MESSAGE = field || ': ' || message, HINT = hint;
  ELSIF hint IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = code, COLUMN = field, MESSAGE = field || ': ' || message, DETAIL = detail;
  ELSE
    RAISE EXCEPTION USING ERRCODE = code, COLUMN = field, MESSAGE = field || ': ' || message, DETAIL = detail, HINT = hint;
  END IF;
END
$$;


--
-- Name: FUNCTION _reject(code text, field text, message text, detail text, hint text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._reject(code text, field text, message text, detail text, hint text) IS 'Private: raise a herald input error with its SQLSTATE and the field in COLUMN.';


--
-- Name: _release_after(bigint[], text[], text[]); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._release_after(ids bigint[], producers text[] DEFAULT NULL::text[], keys text[] DEFAULT NULL::text[]) RETURNS void
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
  v_released boolean;
BEGIN
  IF _release_after.producers IS NULL THEN
    SELECT array_agg(m.producer), array_agg(m.ordering_key), array_agg(m.id)
    INTO _release_after.producers, _release_after.keys, _release_after.ids
    FROM herald.messages m
    WHERE m.id = ANY (_release_after.ids) AND m.ordering_key IS NOT NULL;
  END IF;
  WITH finished AS (
    SELECT f.producer, f.ordering_key, f.id
    FROM unnest(_release_after.producers, _release_after.keys, _release_after.ids) AS f (producer, ordering_key, id)
  ), watched AS ( -- held FOR KEY SHARE by an enqueue in progress
    SELECT f.* FROM finished f
    WHERE EXISTS (SELECT FROM herald.messages m WHERE m.id = f.id)
      AND NOT EXISTS (SELECT FROM herald.messages m WHERE m.id = f.id FOR UPDATE SKIP LOCKED)
  ), firsts AS (
    SELECT DISTINCT ON (f.producer, f.ordering_key) f.producer, f.ordering_key, f.id AS finished_id, n.id, n.status
    FROM finished f
    CROSS JOIN LATERAL (SELECT e.id, e.status FROM herald.messages e
                        WHERE e.producer = f.producer AND e.ordering_key = f.ordering_key
                          AND e.finished_at IS NULL
                        ORDER BY e.id LIMIT 1) AS n
    ORDER BY f.producer, f.ordering_key, f.id DESC
  ), released AS (
    UPDATE herald.messages m
    SET status = 'queued'
    WHERE m.id IN (SELECT e.id FROM herald.messages e
                   WHERE e.id IN (SELECT r.id FROM firsts r WHERE r.status = 'held') AND e.status = 'held'
                   FOR NO KEY UPDATE SKIP LOCKED)
    RETURNING m.id
  ), steady AS ( -- the first is queued or processing already, and not finishing right now
    SELECT e.id FROM herald.messages e
    WHERE e.id IN (SELECT r.id FROM firsts r WHERE r.status <> 'held') AND e.status IN ('queued', 'processing')
    FOR SHARE SKIP LOCKED
  ), noted AS (
    INSERT INTO herald.ordering_rechecks (producer, ordering_key, message_id)
    SELECT w.producer, w.ordering_key, w.id FROM watched w
    UNION
    SELECT r.producer, r.ordering_key, r.finished_id FROM firsts r
    WHERE r.id NOT IN (SELECT x.id FROM released x UNION ALL SELECT y.id FROM steady y)
  )
  SELECT EXISTS (SELECT FROM released) INTO v_released;
  IF v_released THEN
    PERFORM herald._notify(ARRAY['herald_queue']);
  END IF;
END
$$;


--
-- Name: FUNCTION _release_after(ids bigint[], producers text[], keys text[]); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._release_after(ids bigint[], producers text[], keys text[]) IS 'Private: after messages with ordering keys finished, release the next message of each key, or note the key for reap_stale.';


--
-- Name: _repeats(herald.message_spec[], herald.producers, bigint[], timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._repeats(specs herald.message_spec[], policy herald.producers, ids bigint[], now timestamp with time zone, OUT positions bigint[], OUT first_ids bigint[], OUT valid boolean) RETURNS record
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(1213612876, h)
  FROM (SELECT DISTINCT hashtext(s.idempotency_key) AS h FROM unnest(specs) AS s
        WHERE s.idempotency_key IS NOT NULL ORDER BY 1) AS keys;
  SELECT array_agg(r.ordinality), array_agg(coalesce(r.stored_id, _repeats.ids[r.first_ord])),
         coalesce(bool_and(coalesce(herald._valid(kind => c.kind, max_payload_bytes => c.max_payload_bytes, max_segments => c.max_segments, max_recipients => c.max_recipients,
           recipient => r.recipient, payload => r.payload, run_at => r.run_at, priority => r.priority,
           policy => _repeats.policy, channel_producers => c.producers, channel_prefixes => c.recipient_prefixes,
           max_attempts => r.max_attempts, metadata => r.metadata, idempotency_key => r.idempotency_key,
           ordering_key => r.ordering_key, expires_at => r.expires_at, recipient_zone => r.recipient_zone,
           now => _repeats.now), false)), true)
  INTO positions, first_ids, valid
  FROM (SELECT s.*, min(s.ordinality) OVER (PARTITION BY s.idempotency_key) AS first_ord,
               (SELECT m.id FROM herald.messages m
                WHERE m.producer = (_repeats.policy).producer AND m.idempotency_key = s.idempotency_key) AS stored_id
        FROM unnest(specs) WITH ORDINALITY AS s
        WHERE s.idempotency_key IS NOT NULL) AS r
  LEFT JOIN herald.channels c ON c.name = r.channel
  WHERE r.stored_id IS NOT NULL OR r.ordinality > r.first_ord;
END
$$;


--
-- Name: FUNCTION _repeats(specs herald.message_spec[], policy herald.producers, ids bigint[], now timestamp with time zone, OUT positions bigint[], OUT first_ids bigint[], OUT valid boolean); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._repeats(specs herald.message_spec[], policy herald.producers, ids bigint[], now timestamp with time zone, OUT positions bigint[], OUT first_ids bigint[], OUT valid boolean) IS 'Private: lock the idempotency keys of an enqueue call and find its repeats (generic plan).';


--
-- Name: _sender_allowed(text, text[]); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._sender_allowed(sender text, senders text[]) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT EXISTS (SELECT FROM unnest(senders) AS s, herald._mailbox(value => sender) AS a
                 WHERE lower(s) IN (lower(a), lower(split_part(a, '@', 2)), lower('@' || split_part(a, '@', 2))))
$$;


--
-- Name: FUNCTION _sender_allowed(sender text, senders text[]); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._sender_allowed(sender text, senders text[]) IS 'Private: true when an e-mail payload''s from is an address, or at a domain, the producer may use.';


--
-- Name: _settle_rechecks(); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._settle_rechecks() RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_producers text[];
  v_keys text[];
  v_message_ids bigint[];
BEGIN
  WITH taken AS (
    DELETE FROM herald.ordering_rechecks o
    WHERE o.id IN (SELECT x.id FROM herald.ordering_rechecks x ORDER BY x.id LIMIT 10000 FOR UPDATE SKIP LOCKED)
    RETURNING o.producer, o.ordering_key, o.message_id
  )
  SELECT array_agg(t.producer), array_agg(t.ordering_key), array_agg(t.message_id)
  INTO v_producers, v_keys, v_message_ids
  FROM taken t;
  IF v_keys IS NOT NULL THEN
    PERFORM herald._release_after(ids => v_message_ids, producers => v_producers, keys => v_keys);
  END IF;
END
$$;


--
-- Name: FUNCTION _settle_rechecks(); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._settle_rechecks() IS 'Private: release the next message of the ordering keys noted in herald.ordering_rechecks, once no enqueue holds their finished message.';


--
-- Name: _shallow(jsonb); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._shallow(value jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $_$
  SELECT NOT value @? 'strict $.**{33}'
$_$;


--
-- Name: FUNCTION _shallow(value jsonb); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._shallow(value jsonb) IS 'Private: true when no value inside a JSON value lies more than 32 levels below its top (inlined).';


--
-- Name: _site(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._site(host text) RETURNS text
    LANGUAGE plpgsql STABLE
    SET plan_cache_mode TO 'force_generic_plan'
    AS $_$
DECLARE
  labels text[] := string_to_array(host, '.');
  n integer := cardinality(labels);
  suffix_labels integer;
BEGIN
  IF n < 2 OR host ~ '^(\[.*\]|[0-9.]+)$' THEN
    RETURN host;
  END IF;
  SELECT coalesce(min(k - 1) FILTER (WHERE p.exception),
                  greatest(1, max(k) FILTER (WHERE p.normal), max(k + 1) FILTER (WHERE p.wildcard AND k < n)))
  INTO suffix_labels
  FROM herald.public_suffixes p, LATERAL (SELECT cardinality(string_to_array(p.suffix, '.')) AS k) AS l
  WHERE p.suffix = ANY (ARRAY(SELECT array_to_string(labels[n - i + 1:n], '.') FROM generate_series(1, n) AS i));
  RETURN array_to_string(labels[greatest(n - suffix_labels, 1):n], '.');
END
$_$;


--
-- Name: FUNCTION _site(host text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._site(host text) IS 'Private: a host''s registrable domain by the Public Suffix List (the host itself when it has none).';


--
-- Name: _sms_segments(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._sms_segments(body text) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE
    AS $_$
DECLARE
  gsm boolean := body ~ ('^' || herald._gsm7() || '*$');
  -- septets (GSM-7: the extension table's characters take two), else UTF-16 units
  units integer := length(body) + CASE WHEN gsm THEN regexp_count(body, herald._gsm7(extension_only => true))
                                       ELSE regexp_count(body, '[\U00010000-\U0010ffff]') END;
  single integer := CASE WHEN gsm THEN 160 ELSE 70 END; -- a lone segment's
  part integer := CASE WHEN gsm THEN 153 ELSE 67 END;   -- each part's, beside its header
BEGIN
  RETURN CASE WHEN units <= single THEN 1 ELSE ceil(units::numeric / part)::integer END;
END
$_$;


--
-- Name: FUNCTION _sms_segments(body text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._sms_segments(body text) IS 'Private: the SMS segments a text takes (GSM-7 160/153, else UCS-2 70/67).';


--
-- Name: _sms_within(text, integer); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._sms_within(body text, max_segments integer) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT length(body) * 2 <= 67 * max_segments OR herald._sms_segments(body => body) <= max_segments
$$;


--
-- Name: FUNCTION _sms_within(body text, max_segments integer); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._sms_within(body text, max_segments integer) IS 'Private: whether a text takes at most so many SMS segments (counted only when it could take more).';


--
-- Name: _spend_producer(herald.producers, integer, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._spend_producer(policy herald.producers, n integer, now timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_clock timestamptz := herald._budget_clock(now => now);
  v_clear timestamptz;
BEGIN
  INSERT INTO herald.producer_buckets AS b (producer, clear_at)
  VALUES ((policy).producer, herald._budget_after(clear_at => NULL, now => v_clock,
                                                  spent => (policy).send_window / (policy).send_limit * n))
  ON CONFLICT (producer) DO UPDATE
  SET clear_at = herald._budget_after(clear_at => b.clear_at, now => herald._budget_clock(now => _spend_producer.now),
                                      spent => excluded.clear_at - v_clock)
  RETURNING b.clear_at INTO v_clear;
  IF herald._over_budget(clear_at => v_clear, now => herald._budget_clock(now => _spend_producer.now), budget_window => (policy).send_window,
                         budget_limit => (policy).send_limit) > interval '0' THEN
    PERFORM herald._reject(code => '53400', field => 'producer',
      message => format('producer %L may enqueue at most %s messages per %s (its send_limit)',
                        (policy).producer, (policy).send_limit, (policy).send_window),
      hint => 'retry after herald.producer_wait() seconds; an admin raises herald.producers.send_limit');
  END IF;
END
$$;


--
-- Name: FUNCTION _spend_producer(policy herald.producers, n integer, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._spend_producer(policy herald.producers, n integer, now timestamp with time zone) IS 'Private: count stored messages against the producer''s budget (producers.send_limit); 53400 producer past it.';


--
-- Name: _spend_recipients(herald.message_spec[], bigint[], boolean, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._spend_recipients(specs herald.message_spec[], barred bigint[], single boolean, now timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_clock timestamptz := herald._budget_clock(now => now);
  v_channels text[];
  v_recipients text[];
  v_over record;
  v_wait interval;
  v_lock_timeout text := current_setting('lock_timeout');
BEGIN
  SELECT max(c.budget_wait) INTO v_wait
  FROM herald.channels c
  WHERE c.name IN (SELECT s.channel FROM unnest(specs) AS s) AND (c.recipient_limit IS NOT NULL OR c.range_limit IS NOT NULL);
  BEGIN -- a caller's shorter lock_timeout stands; the block's end (or its abort) restores it
    IF v_wait IS NOT NULL AND (v_lock_timeout = '0' OR v_lock_timeout::interval > v_wait) THEN
      PERFORM set_config('lock_timeout', (extract(epoch FROM v_wait) * 1000)::bigint || 'ms', true);
    END IF;
    WITH asked AS MATERIALIZED ( -- each recipient's count, and each number range's (sms)
      SELECT c.name AS channel, herald._mailbox_key(kind => c.kind, recipient => s.recipient) AS recipient,
             count(*)::integer AS n, c.recipient_limit AS lim, c.recipient_window AS span
      FROM unnest(specs) WITH ORDINALITY AS s
      JOIN herald.channels c ON c.name = s.channel
      WHERE c.recipient_limit IS NOT NULL AND NOT s.ordinality = ANY (coalesce(barred, '{}'))
      GROUP BY 1, 2, 4, 5
      UNION ALL
      SELECT c.name, herald._range_key(channel => c, recipient => s.recipient),
             count(*)::integer, c.range_limit, c.range_window
      FROM unnest(specs) WITH ORDINALITY AS s
      JOIN herald.channels c ON c.name = s.channel
      WHERE c.range_limit IS NOT NULL AND NOT s.ordinality = ANY (coalesce(barred, '{}'))
      GROUP BY 1, 2, 4, 5
    ), spent AS (
      -- excluded.clear_at - v_clock is what these messages add: n steps of span / lim.
      INSERT INTO herald.recipient_buckets AS b (channel, recipient, clear_at)
      SELECT a.channel, a.recipient,
             herald._budget_after(clear_at => NULL, now => v_clock, spent => a.span / a.lim * a.n)
      FROM asked a
      ORDER BY a.channel, a.recipient
      ON CONFLICT (channel, recipient) DO UPDATE
      SET clear_at = herald._budget_after(clear_at => b.clear_at, now => herald._budget_clock(now => _spend_recipients.now),
                                          spent => excluded.clear_at - v_clock)
      RETURNING b.channel, b.recipient, b.clear_at
    )
    SELECT array_agg(k.channel), array_agg(k.recipient) INTO v_channels, v_recipients
    FROM spent k
    JOIN asked a ON a.channel = k.channel AND a.recipient = k.recipient
    WHERE herald._over_budget(clear_at => k.clear_at, now => herald._budget_clock(now => _spend_recipients.now),
                              budget_window => a.span, budget_limit => a.lim) > interval '0';
    PERFORM set_config('lock_timeout', v_lock_timeout, true);
  EXCEPTION WHEN lock_not_available THEN
    PERFORM herald._reject(code => '55P03', field => CASE WHEN single THEN 'recipient' ELSE 'messages' END,
      message => format('waited %s for the budget of a recipient or range (recipient_limit, range_limit), held by another '
                        || 'transaction that enqueued to it and has not committed', v_wait),
      hint => 'retry; producers enqueue last in their transactions, and an admin raises herald.channels.budget_wait');
  END;
  IF v_channels IS NOT NULL THEN -- the first message to one of them
    SELECT s.ordinality AS first, s.recipient, c.name AS channel, c.kind, o.recipient <> m.key AS ranged,
           CASE WHEN o.recipient <> m.key THEN c.range_limit ELSE c.recipient_limit END AS lim,
           CASE WHEN o.recipient <> m.key THEN c.range_window ELSE c.recipient_window END AS span
    INTO v_over
    FROM unnest(specs) WITH ORDINALITY AS s
    JOIN herald.channels c ON c.name = s.channel
    CROSS JOIN LATERAL (SELECT herald._mailbox_key(kind => c.kind, recipient => s.recipient) AS key) AS m
    JOIN unnest(v_channels, v_recipients) AS o (channel, recipient)
      ON o.channel = c.name
     AND o.recipient IN (m.key, herald._range_key(channel => c, recipient => s.recipient))
    ORDER BY s.ordinality
    LIMIT 1;
    PERFORM herald._reject(code => '53400',
      field => CASE WHEN single THEN 'recipient' ELSE format('messages[%s].recipient', v_over.first - 1) END,
      message => CASE WHEN v_over.ranged
        THEN format('%s of %s may be sent at most %s messages per %s on channel %L (its range_limit)',
                    CASE v_over.kind WHEN 'webhook' THEN 'the URLs of the site' ELSE 'the numbers of the range' END,
                    v_over.recipient, v_over.lim, v_over.span, v_over.channel)
        ELSE format('%s may be sent at most %s messages per %s on channel %L (its recipient_limit)',
                    v_over.recipient, v_over.lim, v_over.span, v_over.channel) END,
      hint => 'retry after herald.recipient_wait(channel, recipient) seconds; an admin raises herald.channels.recipient_limit or range_limit');
  END IF;
END
$$;


--
-- Name: FUNCTION _spend_recipients(specs herald.message_spec[], barred bigint[], single boolean, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._spend_recipients(specs herald.message_spec[], barred bigint[], single boolean, now timestamp with time zone) IS 'Private: count stored messages against their recipients'' budgets (channels.recipient_limit); 53400 recipient past it.';


--
-- Name: suppressions; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.suppressions (
    kind text NOT NULL,
    recipient text NOT NULL,
    reason text NOT NULL,
    source text DEFAULT 'operator'::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone,
    CONSTRAINT suppressions_kind_known CHECK ((kind = ANY (ARRAY['email'::text, 'sms'::text, 'webhook'::text, 'custom'::text]))),
    CONSTRAINT suppressions_reason_known CHECK ((reason = ANY (ARRAY['bounced'::text, 'complained'::text, 'unsubscribed'::text, 'manual'::text]))),
    CONSTRAINT suppressions_recipient_length CHECK (((octet_length(recipient) >= 1) AND (octet_length(recipient) <= 2048)))
);


--
-- Name: TABLE suppressions; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.suppressions IS 'Recipients herald does not send to (per channel kind): bounces, complaints, unsubscribes, imported lists.';


--
-- Name: COLUMN suppressions.source; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.suppressions.source IS 'Who added it: sendgrid, twilio, generic (provider events), send (a provider refused a send for good: herald.fail) or operator.';


--
-- Name: COLUMN suppressions.expires_at; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.suppressions.expires_at IS 'When the entry stops applying; NULL: never.';


--
-- Name: _suppression(text, text, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._suppression(kind text, recipient text, now timestamp with time zone) RETURNS SETOF herald.suppressions
    LANGUAGE sql STABLE
    AS $$
  SELECT s.*
  FROM herald.suppressions s
  WHERE s.kind = _suppression.kind
    AND s.recipient = herald._suppression_key(kind => _suppression.kind, recipient => _suppression.recipient)
    AND (s.expires_at IS NULL OR s.expires_at > _suppression.now)
$$;


--
-- Name: FUNCTION _suppression(kind text, recipient text, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._suppression(kind text, recipient text, now timestamp with time zone) IS 'Private: the active suppression covering a recipient, if any (an inlined set-returning function).';


--
-- Name: _suppression_key(text, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._suppression_key(kind text, recipient text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT CASE WHEN kind = 'email' THEN lower(recipient) ELSE recipient END
$$;


--
-- Name: FUNCTION _suppression_key(kind text, recipient text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._suppression_key(kind text, recipient text) IS 'Private: the form of a recipient in herald.suppressions (e-mail in lower case).';


--
-- Name: _suppression_reason(text, text, text, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._suppression_reason(kind text, event text, type text, code text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $_$
  SELECT CASE
           WHEN event = 'bounced' AND type = 'hard' THEN 'bounced'
           WHEN event IN ('complained', 'unsubscribed') THEN event
           WHEN event = 'undelivered' AND (
                  (kind = 'email' AND code ~ '^(5[0-9][0-9] )?5\.1\.(1|2|6|10)$')
               OR (kind = 'sms' AND code IN ('21211', '21614', '21635', '30005', '30006'))
               OR (kind = 'webhook' AND code = '410'))
             THEN 'bounced'
         END
$_$;


--
-- Name: FUNCTION _suppression_reason(kind text, event text, type text, code text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._suppression_reason(kind text, event text, type text, code text) IS 'Private: the suppression reason of a delivery outcome (hard bounce, complaint, unsubscribe, a refusal code that rules the address out), or NULL.';


--
-- Name: _suppressions_normalize(); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._suppressions_normalize() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
  NEW.recipient := herald._suppression_key(kind => NEW.kind, recipient => NEW.recipient);
  RETURN NEW;
END
$$;


--
-- Name: FUNCTION _suppressions_normalize(); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._suppressions_normalize() IS 'Private: the function of trigger suppressions_normalize.';


--
-- Name: _time_zone(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._time_zone(name text) RETURNS boolean
    LANGUAGE plpgsql STABLE
    AS $_$
DECLARE
  v_local timestamp;
BEGIN
  IF name IS NULL OR length(name) > 64 OR name !~ '^(UTC|Etc/GMT[+-](1[0-4]|[0-9])|[A-Z][A-Za-z]*(/[A-Za-z][A-Za-z_-]*)+)$' THEN
    RETURN false; -- before the inner block: no subtransaction for NULL or a malformed name
  END IF;
  BEGIN
    v_local := timezone(name, timestamptz '2000-01-01 00:00+00'); -- an assignment: no query to plan
  EXCEPTION WHEN invalid_parameter_value THEN
    RETURN false;
  END;
  RETURN true;
END
$_$;


--
-- Name: FUNCTION _time_zone(name text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._time_zone(name text) IS 'Private: whether a text is the name of a time zone PostgreSQL knows (UTC, Area/Location).';


--
-- Name: _unsuppressed_copies(jsonb, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._unsuppressed_copies(payload jsonb, now timestamp with time zone) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
  SELECT (payload - '{cc,bcc}'::text[])
         || coalesce((SELECT jsonb_object_agg(k.list, k.kept) -- a list left empty has no row
                      FROM (SELECT c.list, jsonb_agg(to_jsonb(c.address) ORDER BY c.ordinal) AS kept
                            FROM herald._copies(payload => payload) AS c
                            WHERE NOT EXISTS (SELECT FROM herald._suppression(kind => 'email', recipient => c.address,
                                                                              now => _unsuppressed_copies.now))
                            GROUP BY c.list) AS k), '{}')
$$;


--
-- Name: FUNCTION _unsuppressed_copies(payload jsonb, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._unsuppressed_copies(payload jsonb, now timestamp with time zone) IS 'Private: an e-mail payload without the cc and bcc addresses on the suppression list.';


--
-- Name: _url_host(text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._url_host(url text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT rtrim(lower(substring(url FROM '^[^:]+://(?:[^@/?#]*@)?(\[[^]/?#]*\]|[^:/?#]*)')), '.')
$$;


--
-- Name: FUNCTION _url_host(url text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._url_host(url text) IS 'Private: the lower-case host of a URL, without user info, port or final dot.';


--
-- Name: _valid(text, integer, integer, integer, text, jsonb, timestamp with time zone, integer, herald.producers, text[], text[], integer, jsonb, text, text, timestamp with time zone, text, timestamp with time zone, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._valid(kind text, max_payload_bytes integer, max_segments integer, max_recipients integer, recipient text, payload jsonb, run_at timestamp with time zone, priority integer, policy herald.producers, channel_producers text[], channel_prefixes text[], max_attempts integer, metadata jsonb, idempotency_key text, ordering_key text, expires_at timestamp with time zone, recipient_zone text, now timestamp with time zone, checked_kind text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE sql STABLE
    AS $_$
  SELECT coalesce(
        kind IS NOT NULL
    AND (channel_producers IS NULL OR (policy).producer = ANY (channel_producers))
    AND (channel_prefixes IS NULL OR recipient ^@ ANY (channel_prefixes))
    AND CASE kind
          WHEN 'email' THEN herald._email_address(recipient => recipient, syntax_checked => coalesce(checked_kind = 'email', false))
                            AND payload @? 'strict $ ? ((@.subject > "" && (@.text > "" || @.html > "" || @.body > "")) || @.template_id > "")'
                            AND CASE WHEN payload - '{subject,text,html,body}'::text[] = '{}' -- the usual payload
                                     THEN payload ->> 'subject' !~ '[\r\n]'
                                          AND NOT payload @? 'strict $.* ? (@.type() != "string" && @.type() != "null")'
                                     ELSE payload - herald._payload_fields(kind => 'email') = '{}'
                                          AND herald._payload_problem(kind => 'email', payload => payload) IS NULL
                                          AND herald._email_addresses(payload => payload) <= max_recipients
                                          AND (NOT payload ? 'from'
                                               OR herald._sender_allowed(sender => payload ->> 'from', senders => (policy).senders))
                                END
          WHEN 'sms' THEN (coalesce(checked_kind = 'sms', false)
                           OR recipient ~ ('^(?:' || herald._recipient_pattern(kind => 'sms') || ')$'))
                          AND payload @? 'strict $ ? (@.text > "" || @.body > "" || exists(@.media_urls) || exists(@.content_sid))'
                          AND coalesce(length(payload ->> 'text'), 0) <= 1600 AND coalesce(length(payload ->> 'body'), 0) <= 1600
                          AND (max_segments IS NULL OR payload ?| '{media_urls,content_sid}'::text[]
                               OR herald._sms_within(body => coalesce(nullif(payload ->> 'text', ''), payload ->> 'body'), max_segments => max_segments))
                          AND NOT payload @? 'strict $ ? ((@.text.type() != "string" && @.text.type() != "null") || (@.body.type() != "string" && @.body.type() != "null"))'
                          AND payload - herald._payload_fields(kind => 'sms') = '{}'
                          AND (NOT payload ?| '{media_urls,content_sid,content_variables}'::text[]
                               OR herald._payload_problem(kind => 'sms', payload => payload) IS NULL)
          ELSE CASE kind WHEN 'webhook' THEN octet_length(recipient) ELSE length(recipient) END
                 <@ int4range(1, CASE kind WHEN 'webhook' THEN 2048 ELSE 320 END, '[]')
               AND jsonb_typeof(payload) = 'object'
               AND herald._shallow(value => payload)
               AND (kind <> 'webhook' OR ((coalesce(checked_kind = 'webhook', false)
                    OR recipient ~ ('^(?:' || herald._recipient_pattern(kind => 'webhook') || ')$'))
                    AND herald._refused_address(url => recipient) IS NULL))
        END
    AND pg_column_size(payload) <= max_payload_bytes
    AND (run_at IS NULL OR run_at BETWEEN now - interval '1 year' AND now + interval '1 year')
    AND (priority IS NULL OR priority <@ int4range((policy).min_priority, 100, '[]'))
    AND (max_attempts IS NULL OR max_attempts <@ int4range(1, 100, '[]'))
    AND (metadata IS NULL OR (jsonb_typeof(metadata) = 'object' AND pg_column_size(metadata) <= 8192 AND herald._shallow(value => metadata)))
    AND (idempotency_key IS NULL OR length(idempotency_key) <@ int4range(1, 255, '[]'))
    AND (ordering_key IS NULL OR length(ordering_key) <@ int4range(1, 255, '[]'))
    AND (expires_at IS NULL OR expires_at > greatest(run_at, now))
    AND (recipient_zone IS NULL OR herald._time_zone(name => recipient_zone)),
    false)
$_$;


--
-- Name: FUNCTION _valid(kind text, max_payload_bytes integer, max_segments integer, max_recipients integer, recipient text, payload jsonb, run_at timestamp with time zone, priority integer, policy herald.producers, channel_producers text[], channel_prefixes text[], max_attempts integer, metadata jsonb, idempotency_key text, ordering_key text, expires_at timestamp with time zone, recipient_zone text, now timestamp with time zone, checked_kind text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._valid(kind text, max_payload_bytes integer, max_segments integer, max_recipients integer, recipient text, payload jsonb, run_at timestamp with time zone, priority integer, policy herald.producers, channel_producers text[], channel_prefixes text[], max_attempts integer, metadata jsonb, idempotency_key text, ordering_key text, expires_at timestamp with time zone, recipient_zone text, now timestamp with time zone, checked_kind text) IS 'Private: true when a message passes every enqueue rule (inlined set-based check).';


--
-- Name: _validate(herald.message_spec, herald.producers, timestamp with time zone, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald._validate(spec herald.message_spec, policy herald.producers, now timestamp with time zone, field_prefix text) RETURNS void
    LANGUAGE plpgsql STABLE
    AS $_$
#variable_conflict use_variable
DECLARE
  ch herald.channels;
  p text := field_prefix;
  v_field text;
BEGIN
  SELECT c.* INTO ch FROM herald.channels c WHERE c.name = spec.channel;
  IF NOT FOUND THEN
    PERFORM herald._reject(code => '22V01', field => p || 'channel', message => format('unknown channel %L', spec.channel),
      hint => 'known channels are the rows of herald.channels');
  ELSIF NOT (policy).producer = ANY (ch.producers) THEN
    PERFORM herald._reject(code => '42501', field => p || 'channel',
      message => format('channel %L is not open to producer %L', spec.channel, (policy).producer),
      hint => 'an admin adds the producer to herald.channels.producers');
  END IF;

  IF spec.recipient IS NULL OR spec.recipient = '' OR length(spec.recipient) > 320 AND ch.kind IS DISTINCT FROM 'webhook' THEN
    PERFORM herald._reject(code => '22V02', field => p || 'recipient', message => 'must be a non-empty string of at most 320 characters');
  ELSIF ch.kind = 'webhook' AND octet_length(spec.recipient) > 2048 THEN
    PERFORM herald._reject(code => '22V02', field => p || 'recipient', message => 'must be a URL of at most 2048 bytes');
  ELSIF ch.kind = 'email' AND NOT herald._email_address(recipient => spec.recipient) THEN
    PERFORM herald._reject(code => '22V02', field => p || 'recipient', message => problem[1], hint => problem[2])
    FROM (SELECT herald._address_problem(address => spec.recipient)) AS x (problem);
  ELSIF ch.kind = 'sms' AND spec.recipient !~ ('^(?:' || herald._recipient_pattern(kind => 'sms') || ')$') THEN
    PERFORM herald._reject(code => '22V02', field => p || 'recipient', message => format('%L is not an E.164 phone number', spec.recipient),
      hint => 'expected + and country code and number, digits only, e.g. +14155550100');
  ELSIF ch.kind = 'webhook' AND spec.recipient !~ ('^(?:' || herald._recipient_pattern(kind => 'webhook') || ')$') THEN
    PERFORM herald._reject(code => '22V02', field => p || 'recipient', message => format('%L is not an http(s) URL', spec.recipient),
      hint => 'http(s)://host[:port][/path], a port from 1 to 65535');
  ELSIF ch.kind = 'webhook' AND herald._refused_address(url => spec.recipient) IS NOT NULL THEN
    PERFORM herald._reject(code => '22V02', field => p || 'recipient',
      message => 'the URL ' || herald._refused_address(url => spec.recipient),
      hint => 'webhooks may not target internal networks; see docs/security.md');
  ELSIF NOT spec.recipient ^@ ANY (ch.recipient_prefixes) THEN
    PERFORM herald._reject(code => '42501', field => p || 'recipient',
      message => format('%L is not where channel %L may send (%s)', spec.recipient, ch.name,
                        array_to_string(ch.recipient_prefixes, ', ')),
      hint => 'an admin lists the prefix in herald.channels.recipient_prefixes');
  END IF;

  IF jsonb_typeof(spec.payload) = 'object' THEN -- the first field the kind does not take
    v_field := (SELECT min(k) FROM jsonb_object_keys(spec.payload) AS k WHERE k <> ALL (herald._payload_fields(kind => ch.kind)));
  END IF;
  IF spec.payload IS NULL OR jsonb_typeof(spec.payload) <> 'object' THEN
    PERFORM herald._reject(code => '22V03', field => p || 'payload', message => 'must be a JSON object');
  ELSIF ch.kind = 'email' AND NOT spec.payload ? 'template_id'
        AND NOT herald._nonempty_string(obj => spec.payload, key => 'subject') THEN
    PERFORM herald._reject(code => '22V03', field => p || 'payload', message => 'an e-mail needs "subject" (a non-empty string) or "template_id"');
  ELSIF ch.kind = 'email' AND NOT spec.payload ? 'template_id'
        AND NOT (herald._nonempty_string(obj => spec.payload, key => 'text')
                 OR herald._nonempty_string(obj => spec.payload, key => 'html')
                 OR herald._nonempty_string(obj => spec.payload, key => 'body')) THEN
    PERFORM herald._reject(code => '22V03', field => p || 'payload', message => 'an e-mail needs "text", "html" or "body" (a non-empty string) or "template_id"');
  ELSIF ch.kind = 'sms' AND NOT (herald._nonempty_string(obj => spec.payload, key => 'text')
                              OR herald._nonempty_string(obj => spec.payload, key => 'body')
                              OR spec.payload ?| '{media_urls,content_sid}'::text[]) THEN
    PERFORM herald._reject(code => '22V03', field => p || 'payload', message => 'an SMS needs "text" or "body" (a non-empty string), "media_urls" or "content_sid"');
  ELSIF ch.kind = 'sms' AND (length(spec.payload ->> 'text') > 1600 OR length(spec.payload ->> 'body') > 1600) THEN
    PERFORM herald._reject(code => '22V03', field => p || 'payload.' || CASE WHEN length(spec.payload ->> 'text') > 1600 THEN 'text' ELSE 'body' END,
      message => 'must be at most 1600 characters (the most one SMS may carry: Twilio refuses longer, error 21617)');
  ELSIF ch.kind = 'sms' AND ch.max_segments IS NOT NULL AND NOT spec.payload ?| '{media_urls,content_sid}'::text[]
        AND NOT herald._sms_within(body => coalesce(nullif(spec.payload ->> 'text', ''), spec.payload ->> 'body'), max_segments => ch.max_segments) THEN
    PERFORM herald._reject(code => '22V03', field => p || 'payload.' || CASE WHEN nullif(spec.payload ->> 'text', '') IS NULL THEN 'body' ELSE 'text' END,
      message => format('takes %s SMS segments, over the %s of channel %L (%s)', herald._sms_segments(body => t.body), ch.max_segments, ch.name,
                        CASE WHEN t.other IS NULL THEN 'GSM-7: 153 characters a segment'
                             ELSE format('UCS-2 for %L, not a GSM-7 character: 67 characters a segment', t.other) END),
      hint => 'each segment is billed: shorten the text or send a link')
    FROM (SELECT x.body, substring(x.body FROM '[^' || substr(herald._gsm7(), 2)) AS other
          FROM (SELECT coalesce(nullif(spec.payload ->> 'text', ''), spec.payload ->> 'body') AS body) AS x) AS t;
  ELSIF v_field IS NOT NULL THEN
    PERFORM herald._reject(code => '22V03', field => p || 'payload.' || v_field,
      message => format('is not a field of %s payloads; nothing would send it', ch.kind),
      hint => 'fields: ' || array_to_string(herald._payload_fields(kind => ch.kind), ', '));
  ELSIF herald._payload_problem(kind => ch.kind, payload => spec.payload) IS NOT NULL THEN
    PERFORM herald._reject(code => '22V03', field => p || problem[1], message => problem[2])
    FROM (SELECT herald._payload_problem(kind => ch.kind, payload => spec.payload) AS problem) AS x;
  ELSIF ch.kind = 'email' AND herald._email_addresses(payload => spec.payload) > ch.max_recipients THEN
    PERFORM herald._reject(code => '22V03', field => p || CASE WHEN spec.payload ? 'bcc' THEN 'payload.bcc' ELSE 'payload.cc' END,
      message => format('the message goes to %s addresses (recipient, cc and bcc), over the %s of channel %L (its max_recipients)',
                        herald._email_addresses(payload => spec.payload), ch.max_recipients, ch.name),
      hint => 'send it as several messages; an admin raises herald.channels.max_recipients if the provider takes more');
  ELSIF ch.kind = 'email' AND spec.payload ? 'from'
        AND NOT herald._sender_allowed(sender => spec.payload ->> 'from', senders => (policy).senders) THEN
    PERFORM herald._reject(code => '42501', field => p || 'payload.from',
      message => format('%s is not a sender this producer may use', herald._mailbox(value => spec.payload ->> 'from')),
      hint => 'an admin lists the address or its domain in herald.producers.senders; without from, the runner''s From is used');
  ELSIF pg_column_size(spec.payload) > ch.max_payload_bytes THEN
    PERFORM herald._reject(code => '22V04', field => p || 'payload',
      message => format('is %s bytes, over the %s-byte limit of channel %L', pg_column_size(spec.payload), ch.max_payload_bytes, ch.name));
  END IF;

  IF spec.run_at NOT BETWEEN now - interval '1 year' AND now + interval '1 year' THEN
    PERFORM herald._reject(code => '22V05', field => p || 'run_at', message => format('%s is more than a year away from now', spec.run_at));
  END IF;
  IF spec.priority NOT BETWEEN -100 AND 100 THEN
    PERFORM herald._reject(code => '22V06', field => p || 'priority', message => format('%s is outside -100..100 (lower runs first)', spec.priority));
  ELSIF spec.priority < (policy).min_priority THEN
    PERFORM herald._reject(code => '42501', field => p || 'priority',
      message => format('%s is more urgent than this producer may use (%s..100, lower runs first)', spec.priority, (policy).min_priority),
      hint => 'an admin grants a lower min_priority in herald.producers');
  END IF;
  IF spec.max_attempts NOT BETWEEN 1 AND 100 THEN
    PERFORM herald._reject(code => '22V07', field => p || 'max_attempts', message => format('%s is outside 1..100', spec.max_attempts));
  END IF;
  IF jsonb_typeof(spec.metadata) <> 'object' THEN
    PERFORM herald._reject(code => '22V08', field => p || 'metadata', message => 'must be a JSON object');
  ELSIF pg_column_size(spec.metadata) > 8192 THEN
    PERFORM herald._reject(code => '22V08', field => p || 'metadata', message => format('is %s bytes, over the 8192-byte limit', pg_column_size(spec.metadata)));
  ELSIF NOT herald._shallow(value => spec.metadata) THEN
    PERFORM herald._reject(code => '22V08', field => p || 'metadata', message => 'is nested more than 32 levels deep, more than JSON readers take');
  END IF;
  IF spec.idempotency_key = '' OR length(spec.idempotency_key) > 255 THEN
    PERFORM herald._reject(code => '22V09', field => p || 'idempotency_key', message => 'must be 1 to 255 characters');
  END IF;
  IF spec.ordering_key = '' OR length(spec.ordering_key) > 255 THEN
    PERFORM herald._reject(code => '22V10', field => p || 'ordering_key', message => 'must be 1 to 255 characters');
  END IF;
  IF spec.expires_at <= greatest(spec.run_at, now) THEN
    PERFORM herald._reject(code => '22V17', field => p || 'expires_at',
      message => format('%s is not after the time the message is due (%s)', spec.expires_at, greatest(spec.run_at, now)));
  END IF;
  IF spec.recipient_zone IS NOT NULL AND NOT herald._time_zone(name => spec.recipient_zone) THEN
    PERFORM herald._reject(code => '22V19', field => p || 'recipient_zone',
      message => format('%L is not the name of a time zone', spec.recipient_zone),
      hint => 'an IANA name such as America/New_York or Europe/Berlin (the names of pg_timezone_names), or UTC');
  END IF;
END
$_$;


--
-- Name: FUNCTION _validate(spec herald.message_spec, policy herald.producers, now timestamp with time zone, field_prefix text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald._validate(spec herald.message_spec, policy herald.producers, now timestamp with time zone, field_prefix text) IS 'Private: raise the error naming the first bad field of a message (the enqueue rules).';


--
-- Name: cancel(bigint, text, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.cancel(id bigint DEFAULT NULL::bigint, idempotency_key text DEFAULT NULL::text, now timestamp with time zone DEFAULT now()) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
  clock_ok boolean := herald._check_clock(now => cancel.now); -- first: a forged clock changes nothing
  v_id bigint := herald._own_message(id => cancel.id, idempotency_key => cancel.idempotency_key);
  v_status text;
  v_ordered boolean;
BEGIN
  WITH cancelled AS (
    UPDATE herald.messages m
    SET status = 'cancelled', finished_at = cancel.now
    WHERE m.id = v_id AND m.status IN ('queued', 'held')
    RETURNING m.id, m.channel, m.recipient, m.ordering_key
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
    SELECT 'cancelled', cancel.now, ARRAY[c.id], ARRAY[c.channel], ARRAY[herald._key_hash(c.ordering_key, c.recipient)]
    FROM cancelled c
  )
  SELECT 'cancelled', c.ordering_key IS NOT NULL INTO v_status, v_ordered FROM cancelled c;
  IF v_status IS NULL THEN
    RETURN (SELECT m.status FROM herald.messages m WHERE m.id = v_id); -- not cancelled now: what it is instead
  END IF;
  IF v_ordered THEN
    PERFORM herald._release_after(ids => ARRAY[v_id]);
  END IF;
  PERFORM herald._notify(ARRAY['herald_log']);
  RETURN v_status;
END
$$;


--
-- Name: FUNCTION cancel(id bigint, idempotency_key text, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.cancel(id bigint, idempotency_key text, now timestamp with time zone) IS 'Withdraw one of the caller''s messages that is queued or held (by id or idempotency key); returns its status after.';


--
-- Name: claim_batch(text, integer, interval, text[], timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.claim_batch(worker text, batch_size integer DEFAULT 100, lease interval DEFAULT '00:00:30'::interval, channels text[] DEFAULT NULL::text[], now timestamp with time zone DEFAULT now()) RETURNS TABLE(id bigint, channel text, recipient text, payload jsonb, metadata jsonb, attempt integer, lease_token bigint, lease_expires_at timestamp with time zone, expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_column
DECLARE
  clock_ok boolean := herald._check_clock(now => claim_batch.now); -- first: a forged clock changes nothing
  v_token bigint;
  v_channels text[];
  v_kinds text[];
  v_as text[];
  v_leases interval[];
  v_slots integer[];
  v_paused text[];
  v_paused_kinds text[];
  v_paused_to text[];
  v_paused_why text[];
  v_rerouting boolean := false;
  v_recipient_quiet boolean; -- a channel's quiet hours are its recipients' own
  v_suppressing boolean := EXISTS (SELECT FROM herald.suppressions);
  v_limited boolean;
  v_rl_channels text[];
  v_avail double precision[];
  v_caps integer[];
  v_priority integer;
  v_bounded text[]; -- the served channels with a producer_concurrency, in hash order
  v_bounds integer[];
BEGIN
  IF claim_batch.worker IS NULL OR claim_batch.worker = '' OR length(claim_batch.worker) > 200 THEN
    PERFORM herald._reject('22V12', 'worker', 'must be a non-empty name of at most 200 characters');
  END IF;
  IF claim_batch.batch_size IS NULL OR claim_batch.batch_size NOT BETWEEN 1 AND 10000 THEN
    PERFORM herald._reject('22V12', 'batch_size', format('%s is outside 1..10000', claim_batch.batch_size));
  END IF;
  IF claim_batch.lease IS NOT NULL AND claim_batch.lease NOT BETWEEN interval '1 second' AND interval '1 day' THEN
    PERFORM herald._reject('22V12', 'lease', format('%s is outside 1 second..1 day', claim_batch.lease));
  END IF;

  -- The caller may be about to wait for a NOTIFY: producers notify from now on
  -- (herald._notify). Before the claim's snapshot, so a message that misses this
  -- claim finds the mark.
  PERFORM herald._listening('herald_queue');

  -- The channels served (open, asked for), and those a runner paused that have a
  -- fallback; neither in quiet hours (unless those are each recipient's: below).
  SELECT array_agg(c.name ORDER BY c.name) FILTER (WHERE c.serving),
         array_agg(c.kind ORDER BY c.name) FILTER (WHERE c.serving),
         array_agg(c.lease ORDER BY c.name) FILTER (WHERE c.serving),
         bool_or(c.rate IS NOT NULL) FILTER (WHERE c.serving),
         array_agg(c.name ORDER BY c.name) FILTER (WHERE NOT c.serving),
         array_agg(c.kind ORDER BY c.name) FILTER (WHERE NOT c.serving),
         array_agg(c.fallback ORDER BY c.name) FILTER (WHERE NOT c.serving),
         array_agg(c.paused_reason ORDER BY c.name) FILTER (WHERE NOT c.serving),
         bool_or(c.quiet_per_recipient),
         array_agg(c.name ORDER BY hashtext(c.name)) FILTER (WHERE c.serving AND c.producer_concurrency IS NOT NULL),
         array_agg(c.producer_concurrency ORDER BY hashtext(c.name)) FILTER (WHERE c.serving AND c.producer_concurrency IS NOT NULL)
  INTO v_channels, v_kinds, v_leases, v_limited, v_paused, v_paused_kinds, v_paused_to, v_paused_why, v_recipient_quiet,
       v_bounded, v_bounds
  FROM (SELECT c.name, c.kind, c.lease, c.rate, c.fallback, c.paused_reason, NOT c.paused AS serving, c.quiet_per_recipient,
               c.producer_concurrency
        FROM herald.channels c
        WHERE (NOT c.paused AND (claim_batch.channels IS NULL OR c.name = ANY (claim_batch.channels))
               OR c.paused AND c.paused_by = 'runner' AND c.fallback IS NOT NULL)
          AND NOT herald._channel_quiet(quiet_from => c.quiet_from, quiet_until => c.quiet_until, quiet_days => c.quiet_days,
                                        quiet_zone => c.quiet_zone, quiet_per_recipient => c.quiet_per_recipient,
                                        now => claim_batch.now)) AS c;
  IF v_channels IS NULL THEN
    RETURN;
  END IF;
  v_caps := array_fill(claim_batch.batch_size, ARRAY[cardinality(v_channels)]);

  IF v_limited THEN
    -- The buckets of the rate-limited channels: made on first use, locked in name
    -- order (no deadlock between claims of overlapping channels), refilled.
    INSERT INTO herald.rate_buckets (channel, tokens, refilled_at)
    SELECT c.name, coalesce(c.burst, greatest(1, ceil(c.rate)))::double precision, claim_batch.now
    FROM herald.channels c
    WHERE c.name = ANY (v_channels) AND c.rate IS NOT NULL
    ON CONFLICT (channel) DO NOTHING;
    PERFORM FROM herald.rate_buckets b WHERE b.channel = ANY (v_channels) ORDER BY b.channel FOR UPDATE;
    SELECT array_agg(b.channel), array_agg(least(coalesce(c.burst, greatest(1, ceil(c.rate))),
                      b.tokens + c.rate * greatest(0, extract(epoch FROM claim_batch.now - b.refilled_at))))
    INTO v_rl_channels, v_avail
    FROM herald.rate_buckets b
    JOIN herald.channels c ON c.name = b.channel
    WHERE b.channel = ANY (v_channels) AND c.rate IS NOT NULL;
    -- A rate-limited channel gives at most its whole tokens; one without a whole
    -- token is not claimed from this time.
    SELECT array_agg(x.name ORDER BY x.i), array_agg(x.kind ORDER BY x.i), array_agg(x.lease ORDER BY x.i),
           array_agg(coalesce(floor(v_avail[array_position(v_rl_channels, x.name)])::integer, claim_batch.batch_size) ORDER BY x.i)
    INTO v_channels, v_kinds, v_leases, v_caps
    FROM unnest(v_channels, v_kinds, v_leases) WITH ORDINALITY AS x (name, kind, lease, i)
    WHERE coalesce(v_avail[array_position(v_rl_channels, x.name)] >= 1, true);
    IF v_channels IS NULL THEN
      RETURN;
    END IF;
  END IF;
  v_as := v_channels;
  v_slots := ARRAY(SELECT generate_series(1, cardinality(v_channels)));
  IF v_paused IS NOT NULL THEN
    -- A paused channel is claimed as its fallback: the fallback's kind, lease and cap.
    SELECT v_channels || array_agg(p.name ORDER BY p.i), v_kinds || array_agg(p.kind ORDER BY p.i),
           v_leases || array_agg(v_leases[array_position(v_channels, p.fallback)] ORDER BY p.i),
           v_as || array_agg(p.fallback ORDER BY p.i),
           v_slots || array_agg(array_position(v_channels, p.fallback) ORDER BY p.i),
           count(*) > 0
    INTO v_channels, v_kinds, v_leases, v_as, v_slots, v_rerouting
    FROM unnest(v_paused, v_paused_kinds, v_paused_to) WITH ORDINALITY AS p (name, kind, fallback, i)
    WHERE p.fallback = ANY (v_channels);
  END IF;

  -- Nothing queued: no claim statement, no lease token. (The lowest queued priority,
  -- where _ready starts, is one probe of messages_claim_idx whatever the statistics.)
  v_priority := (SELECT min(m.priority) FROM herald.messages m WHERE m.status = 'queued');
  IF v_priority IS NULL THEN
    RETURN;
  END IF;
  v_token := nextval('herald.lease_token_seq');

  RETURN QUERY
  WITH ready AS (
    -- Channels, and producers within a channel, take turns being first within a
    -- priority, one claim after another (the token), so a backlog on one channel, or of
    -- one producer, does not hold back the others.
    -- Each id once (herald._ready may return one twice after a race).
    SELECT DISTINCT ON (r.id) r.id, r.channel, r.recipient
    FROM herald._ready(channels => v_channels, slots => v_slots, caps => v_caps, n => claim_batch.batch_size,
                       turn => v_token, from_priority => v_priority, bounded => v_bounded, bounds => v_bounds,
                       now => claim_batch.now) AS r
  ), barred AS (
    SELECT r.id
    FROM ready r
    WHERE v_suppressing
      AND EXISTS (SELECT FROM herald._suppression(kind => v_kinds[array_position(v_channels, r.channel)],
                                                  recipient => r.recipient, now => claim_batch.now))
  ), suppressed AS (
    UPDATE herald.messages m
    SET status = 'suppressed', finished_at = claim_batch.now
    WHERE m.id = ANY (ARRAY(SELECT b.id FROM barred b))
    RETURNING m.id, m.channel, m.recipient, m.ordering_key, m.producer
  ), noted AS (
    -- Their ordering keys' next messages: released below (herald._settle_rechecks).
    INSERT INTO herald.ordering_rechecks (producer, ordering_key, message_id)
    SELECT s.producer, s.ordering_key, s.id FROM suppressed s WHERE s.ordering_key IS NOT NULL
  ), logged AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
    SELECT 'suppressed', claim_batch.now, array_agg(s.id ORDER BY s.id), array_agg(s.channel ORDER BY s.id),
           array_agg(herald._key_hash(s.ordering_key, s.recipient) ORDER BY s.id)
    FROM suppressed s
    HAVING count(*) > 0
  ), quiet AS (
    -- On a channel whose quiet hours are its recipients' own, a message in them is due
    -- again at their end, its attempt not spent.
    UPDATE herald.messages m
    SET run_at = herald._quiet_end(quiet_from => c.quiet_from, quiet_until => c.quiet_until, quiet_days => c.quiet_days,
                                   quiet_zone => c.quiet_zone, at => claim_batch.now,
                                   recipient_zone => m.recipient_zone, zone_known => true)
    FROM ready r
    JOIN herald.channels c ON c.name = r.channel
    WHERE v_recipient_quiet AND m.id = r.id AND c.quiet_per_recipient
      AND herald._quiet_end(quiet_from => c.quiet_from, quiet_until => c.quiet_until, quiet_days => c.quiet_days,
                            quiet_zone => c.quiet_zone, at => claim_batch.now,
                            recipient_zone => m.recipient_zone, zone_known => true) > claim_batch.now
      AND NOT r.id = ANY (ARRAY(SELECT b.id FROM barred b))
    RETURNING m.id
  ), woke AS (
    -- Those left the batch short: the claimer's listener is woken to claim again.
    SELECT herald._notify(channels => ARRAY['herald_queue']) AS done FROM (SELECT FROM quiet LIMIT 1) AS moved
  ), claimed AS (
    UPDATE herald.messages m
    SET status = 'processing',
        channel = CASE WHEN v_rerouting THEN v_as[array_position(v_channels, m.channel)] ELSE m.channel END,
        attempts = m.attempts + 1,
        lease_token = v_token,
        leased_by = claim_batch.worker,
        lease_expires_at = claim_batch.now + coalesce(claim_batch.lease, v_leases[array_position(v_channels, m.channel)])
    -- By primary key, whatever the planner guesses for LIMIT batch_size (a parameter,
    -- which a generic plan takes for a tenth of the table: it then hashed the whole
    -- table for every claim).
    WHERE m.id = ANY (ARRAY(SELECT r.id FROM ready r EXCEPT ALL SELECT b.id FROM barred b EXCEPT ALL SELECT q.id FROM quiet q))
      AND (SELECT count(*) FROM woke) >= 0 -- (a CTE without data changes runs only when read)
    RETURNING m.id, m.channel, m.recipient, m.payload, m.metadata, m.attempts,
              m.lease_token, m.lease_expires_at, m.expires_at, m.priority, m.run_at, m.ordering_key
  ), rerouted AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes, details)
    SELECT 'rerouted', claim_batch.now, array_agg(c.id ORDER BY c.id), array_agg(c.channel ORDER BY c.id),
           array_agg(herald._key_hash(c.ordering_key, c.recipient) ORDER BY c.id),
           array_agg(jsonb_strip_nulls(jsonb_build_object('from', r.channel,
             'reason', left(v_paused_why[array_position(v_paused, r.channel)], 500))) ORDER BY c.id)
    FROM claimed c
    JOIN ready r ON r.id = c.id
    WHERE v_rerouting AND r.channel <> c.channel
    HAVING count(*) > 0
  ), spent AS (
    UPDATE herald.rate_buckets b
    SET tokens = v_avail[array_position(v_rl_channels, b.channel)] - k.n,
        refilled_at = greatest(b.refilled_at, claim_batch.now)
    FROM (SELECT c.channel, count(*) AS n FROM claimed c GROUP BY c.channel) AS k
    WHERE v_limited AND b.channel = k.channel AND b.channel = ANY (v_rl_channels)
  )
  SELECT c.id, c.channel, c.recipient,
         CASE WHEN v_suppressing AND (c.payload ? 'cc' OR c.payload ? 'bcc') AND v_kinds[array_position(v_channels, c.channel)] = 'email'
              THEN herald._unsuppressed_copies(payload => c.payload, now => claim_batch.now)
              ELSE c.payload
         END,
         c.metadata, c.attempts, c.lease_token, c.lease_expires_at, c.expires_at
  FROM claimed c
  ORDER BY c.priority, c.run_at, c.id;
  IF v_suppressing AND EXISTS (SELECT FROM herald.ordering_rechecks) THEN
    PERFORM herald._settle_rechecks();
  END IF;
END
$$;


--
-- Name: FUNCTION claim_batch(worker text, batch_size integer, lease interval, channels text[], now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.claim_batch(worker text, batch_size integer, lease interval, channels text[], now timestamp with time zone) IS 'Lease the next ready messages to a worker (FOR NO KEY UPDATE SKIP LOCKED), with a new fencing token.';


--
-- Name: complete(bigint[], bigint[], text[], timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.complete(ids bigint[], lease_tokens bigint[], provider_message_ids text[] DEFAULT NULL::text[], now timestamp with time zone DEFAULT now()) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => complete.now); -- first: a forged clock changes nothing
BEGIN
  PERFORM herald._check_arrays(ARRAY['ids', 'lease_tokens', 'provider_message_ids'],
    ARRAY[cardinality(ids), cardinality(lease_tokens), cardinality(provider_message_ids)], 2);
  IF array_position(lease_tokens, NULL) IS NOT NULL THEN -- NULL would mean, to _mark_sent, a message not leased
    PERFORM herald._reject('22V12', 'lease_tokens', 'a lease token is NULL');
  END IF;
  RETURN herald._mark_sent(ids => ids, lease_tokens => lease_tokens, provider_message_ids => provider_message_ids,
                           now => complete.now);
END
$$;


--
-- Name: FUNCTION complete(ids bigint[], lease_tokens bigint[], provider_message_ids text[], now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.complete(ids bigint[], lease_tokens bigint[], provider_message_ids text[], now timestamp with time zone) IS 'Mark delivered messages sent, only under their lease token; returns how many changed.';


--
-- Name: complete(bigint, bigint, text, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.complete(id bigint, lease_token bigint, provider_message_id text DEFAULT NULL::text, now timestamp with time zone DEFAULT now()) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  SELECT herald._check_not_null(ARRAY['id', 'lease_token'], ARRAY[id IS NOT NULL, lease_token IS NOT NULL]);
  SELECT herald.complete(ids => ARRAY[id], lease_tokens => ARRAY[lease_token],
                         provider_message_ids => ARRAY[provider_message_id], now => now) = 1
$$;


--
-- Name: FUNCTION complete(id bigint, lease_token bigint, provider_message_id text, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.complete(id bigint, lease_token bigint, provider_message_id text, now timestamp with time zone) IS 'Mark one delivered message sent, only under its lease token.';


--
-- Name: count_producers(timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.count_producers(now timestamp with time zone DEFAULT now()) RETURNS TABLE(at_max_pending integer, suspended integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => count_producers.now); -- first: a forged clock changes nothing
  v_bounded text[] := ARRAY(SELECT p.producer FROM herald.producers p WHERE p.max_pending IS NOT NULL);
  v_rated text[] := ARRAY(SELECT p.producer FROM herald.producers p -- rates move slowly: recounted each 60th of the window
                          WHERE (p.max_bounce_rate IS NOT NULL OR p.max_complaint_rate IS NOT NULL)
                            AND NOT coalesce(p.rated_at > count_producers.now - p.rate_window / 60, false));
  v_suspending text[];
BEGIN
  IF cardinality(v_bounded) + cardinality(v_rated) = 0 THEN
    at_max_pending := 0;
    suspended := 0;
    RETURN NEXT;
    RETURN;
  END IF;
  IF NOT pg_try_advisory_xact_lock(29384939513078786) THEN
    RETURN;
  END IF;
  IF cardinality(v_bounded) > 0 THEN
    UPDATE herald.producers p
    SET pending = coalesce(c.n, 0), counted_at = count_producers.now
    FROM unnest(v_bounded) AS q (producer)
    LEFT JOIN (SELECT m.producer, count(*) AS n
               FROM herald.messages m
               WHERE m.finished_at IS NULL AND m.producer = ANY (v_bounded)
               GROUP BY m.producer) AS c ON c.producer = q.producer
    WHERE p.producer = q.producer;
  END IF;
  IF cardinality(v_rated) > 0 THEN
    WITH counted AS (
      SELECT q.producer, coalesce(c.sent, 0) AS sent, coalesce(c.bounced, 0) AS bounced,
             coalesce(c.complained, 0) AS complained
      FROM unnest(v_rated) AS q (producer)
      LEFT JOIN (SELECT m.producer, count(*) AS sent,
                        count(*) FILTER (WHERE CASE -- most sent messages have no outcome: no call
                          WHEN m.status = 'sent' THEN m.outcome IS NOT NULL
                               AND herald._suppression_reason(kind => k.kind, event => m.outcome, type => m.outcome_type,
                                                              code => m.outcome_code) = 'bounced'
                          ELSE m.last_error_class = 'permanent'
                               AND herald._suppression_reason(kind => k.kind, event => 'undelivered', type => NULL,
                                                              code => m.last_error_code) = 'bounced'
                          END) AS bounced,
                        count(*) FILTER (WHERE m.outcome = 'complained') AS complained
                 FROM herald.messages m
                 JOIN herald.producers r ON r.producer = m.producer
                 JOIN herald.channels k ON k.name = m.channel
                 WHERE m.producer = ANY (v_rated) AND m.status IN ('sent', 'dead')
                   AND m.finished_at >= count_producers.now - r.rate_window
                 GROUP BY m.producer) AS c ON c.producer = q.producer
    ), rated AS (
      SELECT c.*, p.suspended_until, p.rate_window,
             c.sent >= p.rate_min_sent AND (c.bounced > p.max_bounce_rate * c.sent
                                            OR c.complained > p.max_complaint_rate * c.sent) AS over,
             CASE WHEN c.bounced > p.max_bounce_rate * c.sent
                  THEN format('%s of %s messages in the last %s bounced, over max_bounce_rate %s',
                              c.bounced, c.sent, p.rate_window, p.max_bounce_rate)
                  ELSE format('%s of %s messages in the last %s drew a complaint, over max_complaint_rate %s',
                              c.complained, c.sent, p.rate_window, p.max_complaint_rate)
             END AS reason
      FROM counted c
      JOIN herald.producers p ON p.producer = c.producer
    ), updated AS (
      UPDATE herald.producers p
      SET sent_recent = r.sent, bounced_recent = r.bounced, complained_recent = r.complained,
          rated_at = count_producers.now,
          suspended_until = CASE WHEN r.over AND NOT coalesce(r.suspended_until > count_producers.now, false)
                                 THEN count_producers.now + r.rate_window ELSE p.suspended_until END,
          suspended_reason = CASE WHEN r.over AND NOT coalesce(r.suspended_until > count_producers.now, false)
                                  THEN r.reason ELSE p.suspended_reason END
      FROM rated r
      WHERE p.producer = r.producer
      RETURNING p.producer, r.over AND NOT coalesce(r.suspended_until > count_producers.now, false) AS newly
    )
    SELECT array_agg(u.producer) FILTER (WHERE u.newly) INTO v_suspending FROM updated u;
    IF v_suspending IS NOT NULL THEN -- their due messages wait out the suspension
      UPDATE herald.messages m
      SET run_at = p.suspended_until
      FROM herald.producers p
      WHERE p.producer = ANY (v_suspending) AND m.producer = p.producer
        AND m.status IN ('queued', 'held') AND m.run_at < p.suspended_until; -- a held one keeps it when released
    END IF;
  END IF;
  SELECT count(*) FILTER (WHERE p.pending >= p.max_pending), count(*) FILTER (WHERE p.suspended_until > count_producers.now)
  INTO at_max_pending, suspended
  FROM herald.producers p;
  RETURN NEXT;
END
$$;


--
-- Name: FUNCTION count_producers(now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.count_producers(now timestamp with time zone) IS 'Count the bounded producers'' backlogs and recent bounces and complaints; suspend one over its rates (runners call it periodically).';


--
-- Name: create_consumer_group(text, integer, text, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.create_consumer_group("group" text, partitions integer DEFAULT 1, start text DEFAULT 'latest'::text, now timestamp with time zone DEFAULT now()) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => create_consumer_group.now); -- first: a forged clock changes nothing
  existing integer;
  v_start bigint;
BEGIN
  PERFORM herald._check_group("group");
  IF partitions IS NULL OR partitions NOT BETWEEN 1 AND 256 THEN
    PERFORM herald._reject('22V12', 'partitions', format('%s is outside 1..256', coalesce(partitions::text, 'NULL')));
  END IF;
  IF start IS NULL OR start NOT IN ('latest', 'earliest') THEN
    PERFORM herald._reject('22V12', 'start', format('%s is neither latest nor earliest', coalesce(quote_literal(start), 'NULL')));
  END IF;

  SELECT g.partitions INTO existing FROM herald.consumer_groups g WHERE g.name = "group";
  IF FOUND THEN
    IF existing <> partitions THEN
      PERFORM herald._reject('22V16', 'partitions',
        format('consumer group %L exists with %s partitions, not %s', "group", existing, partitions));
    END IF;
    RETURN false;
  END IF;

  IF start = 'latest' THEN
    SELECT c.next_offset - 1 INTO v_start FROM herald.log_counter c;
  ELSE
    SELECT coalesce(min(s.first_offset) - 1, (SELECT c.next_offset - 1 FROM herald.log_counter c))
    INTO v_start FROM herald.log_statements s WHERE s.first_offset IS NOT NULL;
  END IF;

  INSERT INTO herald.consumer_groups (name, partitions, created_at)
  VALUES ("group", partitions, now)
  ON CONFLICT (name) DO NOTHING;
  IF NOT FOUND THEN
    RETURN false; -- created concurrently
  END IF;
  INSERT INTO herald.consumer_offsets (group_name, partition, committed_offset, updated_at)
  SELECT "group", p, v_start, now FROM generate_series(0, partitions - 1) p;
  RETURN true;
END
$$;


--
-- Name: FUNCTION create_consumer_group("group" text, partitions integer, start text, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.create_consumer_group("group" text, partitions integer, start text, now timestamp with time zone) IS 'Register a consumer group of herald.log (idempotent).';


--
-- Name: dispatch_callbacks(integer, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.dispatch_callbacks(max integer DEFAULT 1000, now timestamp with time zone DEFAULT now()) RETURNS TABLE(events integer, callbacks integer, set_aside integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => dispatch_callbacks.now); -- first: a forged clock changes nothing
  v_group text := (herald._callback_names())."group";
  v_owner text := (herald._callback_names()).producer;
  v_after bigint;
  v_upto bigint;
  v_read integer;
  v_offsets bigint[];
  v_producers text[];
  v_specs herald.message_spec[];
  v_enqueued integer := 0;
  v_set_aside integer := 0;
  v_producer text;
  v_mine herald.message_spec[];
  v_error text;
BEGIN
  IF dispatch_callbacks.max IS NULL OR dispatch_callbacks.max NOT BETWEEN 1 AND 10000 THEN
    PERFORM herald._reject('22V12', 'max', format('%s is outside 1..10000', coalesce(dispatch_callbacks.max::text, 'NULL')));
  END IF;
  SELECT o.committed_offset INTO v_after FROM herald.consumer_offsets o
  WHERE o.group_name = v_group AND o.partition = 0
  FOR UPDATE SKIP LOCKED;
  IF v_after IS NULL THEN
    RETURN QUERY SELECT 0, 0, 0;
    RETURN;
  END IF;
  IF current_setting('transaction_isolation') = 'read committed' THEN
    PERFORM herald.log_sequence(10000);
  END IF;

  WITH e AS MATERIALIZED (SELECT * FROM herald._log_after(v_after, 1, 0, dispatch_callbacks.max))
  SELECT (SELECT count(*) FROM e), (SELECT max(e."offset") FROM e),
         array_agg(c."offset" ORDER BY c."offset"), array_agg(c.producer ORDER BY c."offset"),
         array_agg(c.spec ORDER BY c."offset")
  INTO v_read, v_upto, v_offsets, v_producers, v_specs
  FROM (SELECT e."offset", p.producer,
               herald._callback_spec(p => p, m => m, kind => e.kind, "offset" => e."offset", at => e.at) AS spec
        FROM e
        JOIN herald.messages m ON m.id = e.message_id
        JOIN herald.producers p ON p.producer = m.producer) AS c
  WHERE c.spec IS DISTINCT FROM NULL; -- (IS NOT NULL of a row asks that every field be set)

  IF v_specs IS NOT NULL THEN
    BEGIN
      PERFORM herald._check_callback_channel(channel => c.channel) FROM (SELECT DISTINCT s.channel FROM unnest(v_specs) AS s) AS c;
      PERFORM herald._enqueue(specs => v_specs, now => dispatch_callbacks.now, single => false, as_producer => v_owner);
      v_enqueued := cardinality(v_specs);
    EXCEPTION WHEN data_exception OR insufficient_privilege OR configuration_limit_exceeded THEN
      FOR v_producer IN SELECT DISTINCT u.p FROM unnest(v_producers) AS u (p) LOOP
        v_mine := ARRAY(SELECT v_specs[i] FROM generate_subscripts(v_producers, 1) AS i
                        WHERE v_producers[i] = v_producer ORDER BY i);
        BEGIN
          PERFORM herald._check_callback_channel(channel => (v_mine[1]).channel);
          PERFORM herald._enqueue(specs => v_mine, now => dispatch_callbacks.now, single => false, as_producer => v_owner);
          v_enqueued := v_enqueued + cardinality(v_mine);
        EXCEPTION WHEN data_exception OR insufficient_privilege OR configuration_limit_exceeded THEN
          GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT;
          INSERT INTO herald.consumer_dead_letters
            (group_name, partition, "offset", message_id, kind, channel, at, detail, error, dead_at)
          SELECT v_group, 0, e."offset", e.message_id, e.kind, e.channel, e.at, e.detail,
                 left(format('callback to producer %s refused: %s', v_producer, v_error), 2000), dispatch_callbacks.now
          FROM herald._log_after(v_after, 1, 0, dispatch_callbacks.max) AS e
          WHERE e."offset" = ANY (ARRAY(SELECT v_offsets[i] FROM generate_subscripts(v_producers, 1) AS i
                                        WHERE v_producers[i] = v_producer));
          v_set_aside := v_set_aside + cardinality(v_mine);
        END;
      END LOOP;
    END;
  END IF;

  IF v_upto IS NOT NULL THEN
    UPDATE herald.consumer_offsets o
    SET committed_offset = v_upto, updated_at = dispatch_callbacks.now
    WHERE o.group_name = v_group AND o.partition = 0;
  END IF;
  RETURN QUERY SELECT v_read, v_enqueued, v_set_aside;
END
$$;


--
-- Name: FUNCTION dispatch_callbacks(max integer, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.dispatch_callbacks(max integer, now timestamp with time zone) IS 'Status callbacks: turn the log events of producers with a callback_url into signed webhooks to it, each event once.';


--
-- Name: end_suspension(text, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.end_suspension(producer text, now timestamp with time zone DEFAULT now()) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => end_suspension.now); -- NULL refused
  v_until timestamptz;
BEGIN
  PERFORM herald._check_not_null(ARRAY['producer'], ARRAY[end_suspension.producer IS NOT NULL]);
  UPDATE herald.producers p
  SET suspended_until = NULL, suspended_reason = NULL, rated_at = NULL
  FROM (SELECT x.suspended_until FROM herald.producers x WHERE x.producer = end_suspension.producer FOR UPDATE) AS old
  WHERE p.producer = end_suspension.producer AND old.suspended_until > end_suspension.now
  RETURNING old.suspended_until INTO v_until;
  IF v_until IS NULL THEN
    RETURN false;
  END IF;
  UPDATE herald.messages m
  SET run_at = end_suspension.now
  WHERE m.producer = end_suspension.producer AND m.finished_at IS NULL
    AND m.status IN ('queued', 'held') AND m.run_at = v_until;
  PERFORM herald._notify(ARRAY['herald_queue']);
  RETURN true;
END
$$;


--
-- Name: FUNCTION end_suspension(producer text, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.end_suspension(producer text, now timestamp with time zone) IS 'End a producer''s suspension for its bounce or complaint rate early: its enqueues are taken and its held-back messages are due now.';


--
-- Name: enqueue(text, text, jsonb, timestamp with time zone, integer, text, text, integer, jsonb, timestamp with time zone, text, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.enqueue(channel text, recipient text, payload jsonb, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, priority integer DEFAULT NULL::integer, idempotency_key text DEFAULT NULL::text, ordering_key text DEFAULT NULL::text, max_attempts integer DEFAULT NULL::integer, metadata jsonb DEFAULT NULL::jsonb, expires_at timestamp with time zone DEFAULT NULL::timestamp with time zone, recipient_zone text DEFAULT NULL::text, now timestamp with time zone DEFAULT now()) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
  -- PL/pgSQL rather than SQL: a SQL function that is not inlined is planned at every call.
  RETURN (herald._enqueue(
            specs => ARRAY[ROW(channel, recipient, payload, run_at, priority, idempotency_key,
                               ordering_key, max_attempts, metadata, expires_at, recipient_zone)::herald.message_spec],
            now => now,
            single => true))[1];
END
$$;


--
-- Name: FUNCTION enqueue(channel text, recipient text, payload jsonb, run_at timestamp with time zone, priority integer, idempotency_key text, ordering_key text, max_attempts integer, metadata jsonb, expires_at timestamp with time zone, recipient_zone text, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.enqueue(channel text, recipient text, payload jsonb, run_at timestamp with time zone, priority integer, idempotency_key text, ordering_key text, max_attempts integer, metadata jsonb, expires_at timestamp with time zone, recipient_zone text, now timestamp with time zone) IS 'Store one notification and return its id (idempotent with idempotency_key); errors 22V01-22V10, 22V17 and 22V19 name the field.';


--
-- Name: enqueue_batch(jsonb, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.enqueue_batch(messages jsonb, now timestamp with time zone DEFAULT now()) RETURNS bigint[]
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
  n integer;
  specs herald.message_spec[];
  v_plain boolean;
BEGIN
  IF messages IS NULL OR jsonb_typeof(messages) <> 'array' THEN
    PERFORM herald._reject(code => '22V11', field => 'messages', message => 'must be a JSON array of message objects');
  END IF;
  n := jsonb_array_length(messages);
  IF n = 0 OR n > 10000 THEN
    PERFORM herald._reject(code => '22V11', field => 'messages', message => format('has %s elements; 1 to 10000 are allowed', n));
  END IF;

  -- The usual batch: every element an object of exactly channel, recipient and payload,
  -- the first two strings, read as it is proved so. jsonb orders objects by their
  -- number of members first, so `< R` (R: four members) holds for objects of at most
  -- three, and ?& then proves the three keys.
  SELECT array_agg(ROW(e ->> 'channel', e ->> 'recipient', nullif(e -> 'payload', 'null'),
                       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::herald.message_spec),
         bool_and(coalesce(e < '{"": null, "a": null, "b": null, "c": null}'
                           AND e ?& '{channel,recipient,payload}'
                           AND jsonb_typeof(e -> 'channel') = 'string'
                           AND jsonb_typeof(e -> 'recipient') = 'string', false))
  INTO specs, v_plain
  FROM (SELECT jsonb_path_query(messages, 'strict $[*]') AS e) AS elements;

  IF NOT v_plain THEN
    specs := NULL;
    -- Any other batch: every element an object of known fields, each of a JSON type it
    -- takes (strings: the texts and run_at; numbers or strings: the integers; null:
    -- absent; in lax mode a missing field gives no item, and .type() does not unwrap an
    -- array), read by jsonb_populate_recordset, which may still refuse a value.
    IF NOT messages @? 'lax $[*] ? (@.type() != "object"
          || (@.channel.type() != "string" && @.channel.type() != "null")
          || (@.recipient.type() != "string" && @.recipient.type() != "null")
          || (@.run_at.type() != "string" && @.run_at.type() != "null")
          || (@.expires_at.type() != "string" && @.expires_at.type() != "null")
          || (@.idempotency_key.type() != "string" && @.idempotency_key.type() != "null")
          || (@.ordering_key.type() != "string" && @.ordering_key.type() != "null")
          || (@.recipient_zone.type() != "string" && @.recipient_zone.type() != "null")
          || (@.priority.type() != "number" && @.priority.type() != "string" && @.priority.type() != "null")
          || (@.max_attempts.type() != "number" && @.max_attempts.type() != "string" && @.max_attempts.type() != "null"))'
       AND NOT EXISTS (SELECT FROM (SELECT jsonb_path_query(messages, 'lax $[*]') AS e) AS elements
                       WHERE e - '{channel,recipient,payload,run_at,priority,idempotency_key,ordering_key,max_attempts,metadata,expires_at,recipient_zone}'::text[] <> '{}') THEN
      BEGIN
        specs := ARRAY(SELECT jsonb_populate_recordset(NULL::herald.message_spec, messages));
      EXCEPTION WHEN data_exception THEN
        specs := NULL; -- a run_at or an integer that does not convert: named below
      END;
    END IF;
  END IF;

  IF specs IS NULL THEN
    specs := herald._message_specs(messages => messages);
  END IF;
  RETURN herald._enqueue(specs => specs, now => enqueue_batch.now, single => false);
END
$_$;


--
-- Name: FUNCTION enqueue_batch(messages jsonb, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.enqueue_batch(messages jsonb, now timestamp with time zone) IS 'Store many notifications given as a JSON array, all or nothing; ids in input order; errors name messages[i].field.';


--
-- Name: enqueue_many(text[], text[], jsonb[], timestamp with time zone[], integer[], text[], text[], integer[], jsonb[], timestamp with time zone[], text[], timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.enqueue_many(channels text[], recipients text[], payloads jsonb[], run_ats timestamp with time zone[] DEFAULT NULL::timestamp with time zone[], priorities integer[] DEFAULT NULL::integer[], idempotency_keys text[] DEFAULT NULL::text[], ordering_keys text[] DEFAULT NULL::text[], max_attempts integer[] DEFAULT NULL::integer[], metadata jsonb[] DEFAULT NULL::jsonb[], expires_ats timestamp with time zone[] DEFAULT NULL::timestamp with time zone[], recipient_zones text[] DEFAULT NULL::text[], now timestamp with time zone DEFAULT now()) RETURNS bigint[]
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  n integer := coalesce(cardinality(channels), 0);
BEGIN
  IF n = 0 OR n > 10000 THEN
    PERFORM herald._reject(code => '22V11', field => 'channels', message => format('has %s elements; 1 to 10000 messages are allowed', n));
  END IF;
  PERFORM herald._check_arrays(
    fields => ARRAY['channels', 'recipients', 'payloads', 'run_ats', 'priorities', 'idempotency_keys',
                    'ordering_keys', 'max_attempts', 'metadata', 'expires_ats', 'recipient_zones'],
    lengths => ARRAY[n, cardinality(recipients), cardinality(payloads), cardinality(run_ats),
                     cardinality(priorities), cardinality(idempotency_keys), cardinality(ordering_keys),
                     cardinality(max_attempts), cardinality(metadata), cardinality(expires_ats),
                     cardinality(recipient_zones)],
    required => 3, code => '22V11');
  RETURN herald._enqueue(
    specs => ARRAY(SELECT ROW(u.c, u.r, u.p, u.ra, u.pr, u.ik, u.ok, u.ma, u.md, u.ea, u.rz)::herald.message_spec
                   FROM (SELECT unnest(channels) AS c, unnest(recipients) AS r, unnest(payloads) AS p,
                                unnest(run_ats) AS ra, unnest(priorities) AS pr, unnest(idempotency_keys) AS ik,
                                unnest(ordering_keys) AS ok, unnest(max_attempts) AS ma,
                                unnest(metadata) AS md, unnest(expires_ats) AS ea,
                                unnest(recipient_zones) AS rz) AS u),
    now => enqueue_many.now,
    single => false);
END
$$;


--
-- Name: FUNCTION enqueue_many(channels text[], recipients text[], payloads jsonb[], run_ats timestamp with time zone[], priorities integer[], idempotency_keys text[], ordering_keys text[], max_attempts integer[], metadata jsonb[], expires_ats timestamp with time zone[], recipient_zones text[], now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.enqueue_many(channels text[], recipients text[], payloads jsonb[], run_ats timestamp with time zone[], priorities integer[], idempotency_keys text[], ordering_keys text[], max_attempts integer[], metadata jsonb[], expires_ats timestamp with time zone[], recipient_zones text[], now timestamp with time zone) IS 'Store many notifications given as parallel arrays, all or nothing; ids in input order.';


--
-- Name: extend_lease(bigint[], bigint[], interval, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.extend_lease(ids bigint[], lease_tokens bigint[], lease interval, now timestamp with time zone DEFAULT now()) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => extend_lease.now); -- first: a forged clock changes nothing
  changed integer;
BEGIN
  PERFORM herald._check_arrays(ARRAY['ids', 'lease_tokens'],
    ARRAY[cardinality(ids), cardinality(lease_tokens)], 2);
  IF lease IS NULL OR lease NOT BETWEEN interval '1 second' AND interval '1 day' THEN
    PERFORM herald._reject('22V12', 'lease', format('%s is outside 1 second..1 day', coalesce(lease::text, 'NULL')));
  END IF;

  UPDATE herald.messages m
  SET lease_expires_at = extend_lease.now + extend_lease.lease
  FROM unnest(ids, lease_tokens) AS u(id, lease_token)
  WHERE m.id = u.id
    AND m.lease_token = u.lease_token; -- a lease token exists only while processing (messages_lease_when_processing)
  GET DIAGNOSTICS changed = ROW_COUNT;
  RETURN changed;
END
$$;


--
-- Name: FUNCTION extend_lease(ids bigint[], lease_tokens bigint[], lease interval, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.extend_lease(ids bigint[], lease_tokens bigint[], lease interval, now timestamp with time zone) IS 'Extend the lease of messages still held under their token.';


--
-- Name: fail(bigint[], bigint[], text[], text[], timestamp with time zone[], text[], timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.fail(ids bigint[], lease_tokens bigint[], errors text[], error_classes text[], retry_at timestamp with time zone[] DEFAULT NULL::timestamp with time zone[], error_codes text[] DEFAULT NULL::text[], now timestamp with time zone DEFAULT now()) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => fail.now); -- first: a forged clock changes nothing
  changed integer;
  v_ordered bigint[];
  v_channels text[];
  v_reasons text[];
  v_untils timestamptz[];
  died boolean;
  ready boolean;
  bad text;
  v_taken bigint[];
  v_taken_tokens bigint[];
  taken integer := 0;
BEGIN
  PERFORM herald._check_arrays(ARRAY['ids', 'lease_tokens', 'errors', 'error_classes', 'retry_at', 'error_codes'],
    ARRAY[cardinality(ids), cardinality(lease_tokens), cardinality(errors),
          cardinality(error_classes), cardinality(retry_at), cardinality(error_codes)], 4);
  SELECT c INTO bad FROM unnest(error_classes) AS c
  WHERE c IS NULL OR c NOT IN ('transient', 'rate_limited', 'quota', 'configuration', 'permanent') LIMIT 1;
  IF FOUND THEN
    PERFORM herald._reject('22V12', 'error_classes',
      format('%s is not a failure class', coalesce(quote_literal(bad), 'NULL')),
      hint => 'use transient, rate_limited, quota, configuration or permanent');
  END IF;
  IF EXISTS (SELECT FROM unnest(error_codes) AS c WHERE length(c) > 64) THEN
    PERFORM herald._reject('22V12', 'error_codes', 'a code is over 64 characters');
  END IF;
  -- A provider reported taking the message while this attempt was out (its id stored
  -- by herald.record_delivery_events): it was sent, whatever this report says.
  SELECT array_agg(m.id) FILTER (WHERE m.provider_message_id IS NOT NULL), -- not a scan condition: a probe per id
         array_agg(m.lease_token) FILTER (WHERE m.provider_message_id IS NOT NULL)
  INTO v_taken, v_taken_tokens
  FROM unnest(ids, lease_tokens) AS u(id, lease_token)
  JOIN herald.messages m ON m.id = u.id AND m.lease_token = u.lease_token;
  IF v_taken IS NOT NULL THEN
    taken := herald._mark_sent(ids => v_taken, lease_tokens => v_taken_tokens, provider_message_ids => NULL, now => fail.now);
  END IF;

  WITH failed AS (
    UPDATE herald.messages m
    SET status = d.next_status,
        attempts = d.attempts,
        run_at = CASE WHEN d.next_status = 'queued' THEN d.due_at ELSE m.run_at END,
        finished_at = CASE WHEN d.next_status IN ('dead', 'expired') THEN fail.now END,
        lease_token = NULL,
        lease_expires_at = NULL,
        last_error = d.error,
        last_error_class = d.error_class,
        last_error_code = d.error_code,
        errors = herald._append_error(m.errors, jsonb_build_object(
                   'at', fail.now, 'attempt', m.attempts, 'class', d.error_class,
                   'code', d.error_code, 'error', d.error, 'worker', m.leased_by))
    FROM (
      SELECT u.id, u.lease_token, left(u.error, 2000) AS error, u.error_class, u.error_code,
             CASE
               WHEN u.error_class = 'permanent' THEN 'dead'
               WHEN u.error_class = 'transient' AND x.attempts >= x.max_attempts THEN 'dead'
               WHEN w.due_at >= x.expires_at THEN 'expired'
               ELSE 'queued'
             END AS next_status,
             CASE WHEN u.error_class IN ('rate_limited', 'quota', 'configuration') THEN greatest(x.attempts - 1, 0)
                  ELSE x.attempts END AS attempts,
             n.next_run_at, w.due_at
      FROM unnest(ids, lease_tokens, errors, error_classes, retry_at, error_codes)
             AS u(id, lease_token, error, error_class, retry_at, error_code)
      JOIN herald.messages x ON x.id = u.id
      JOIN herald.channels c ON c.name = x.channel
      CROSS JOIN LATERAL (SELECT greatest(fail.now, coalesce(u.retry_at, CASE
               WHEN u.error_class = 'configuration' THEN fail.now
               WHEN u.error_class = 'quota' THEN fail.now + c.quota_wait
               ELSE fail.now + herald._backoff(x.attempts, c.backoff_base, c.backoff_max) END)) AS next_run_at) AS n
      -- Waiting on the channel's pause (its quota, its setup, its provider down), a
      -- message of a channel with a fallback is due at once: the fallback sends it.
      CROSS JOIN LATERAL (SELECT CASE WHEN c.fallback IS NOT NULL
                                        AND (u.error_class IN ('quota', 'configuration')
                                             OR u.error_class = 'rate_limited' AND c.paused AND c.paused_by = 'runner')
                                   THEN fail.now ELSE n.next_run_at END AS due_at) AS w
    ) AS d
    WHERE m.id = d.id
      AND m.lease_token = d.lease_token -- a lease token exists only while processing (messages_lease_when_processing)
      AND m.provider_message_id IS NULL -- one a report stored since: left to reap_stale, which marks it sent
    RETURNING m.id, m.status, m.run_at, m.channel, m.recipient, m.ordering_key, m.last_error_class,
              m.last_error, m.last_error_code, m.attempts, d.next_run_at
  ), refused AS ( -- a refusal that rules the address out (herald._suppression_reason) stops future sends
    -- (two of one address in a call: the second is a conflict, skipped)
    INSERT INTO herald.suppressions (kind, recipient, reason, source, created_at)
    SELECT c.kind, herald._suppression_key(kind => c.kind, recipient => f.recipient), r.reason, 'send', fail.now
    FROM failed f
    JOIN herald.channels c ON c.name = f.channel
    CROSS JOIN LATERAL (SELECT herald._suppression_reason(kind => c.kind, event => 'undelivered', type => NULL,
                                                          code => f.last_error_code) AS reason) AS r
    WHERE f.status = 'dead' AND f.last_error_class = 'permanent' AND r.reason IS NOT NULL
    ON CONFLICT ON CONSTRAINT suppressions_pkey DO NOTHING
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes, details)
    SELECT f.status, fail.now, array_agg(f.id ORDER BY f.id), array_agg(f.channel ORDER BY f.id),
           array_agg(herald._key_hash(f.ordering_key, f.recipient) ORDER BY f.id),
           array_agg(herald._event_detail(f.status, NULL, f.last_error_class, f.last_error, f.attempts) ORDER BY f.id)
    FROM failed f
    WHERE f.status IN ('dead', 'expired')
    GROUP BY f.status
  )
  SELECT t.n, t.died, t.ready, t.ordered, p.channels, p.reasons, p.untils
  INTO changed, died, ready, v_ordered, v_channels, v_reasons, v_untils
  FROM (SELECT count(*) AS n, bool_or(f.status IN ('dead', 'expired')) AS died,
               bool_or(f.status = 'queued' AND f.run_at <= fail.now) AS ready,
               array_agg(f.id) FILTER (WHERE f.ordering_key IS NOT NULL AND f.status <> 'queued') AS ordered
        FROM failed f) AS t,
       (SELECT array_agg(x.channel ORDER BY x.channel) AS channels, array_agg(x.last_error ORDER BY x.channel) AS reasons,
               array_agg(x.until ORDER BY x.channel) AS untils
        FROM (SELECT DISTINCT ON (g.channel) g.channel, g.last_error, -- a configuration failure's pause has no end
                     CASE WHEN g.last_error_class = 'quota'
                          THEN max(g.next_run_at) OVER (PARTITION BY g.channel) END AS until
              FROM failed g WHERE g.last_error_class = 'configuration' OR (g.last_error_class = 'quota' AND g.next_run_at > fail.now)
              ORDER BY g.channel, g.last_error_class, g.id) AS x) AS p; -- 'configuration' sorts first
  IF v_ordered IS NOT NULL THEN
    PERFORM herald._release_after(ids => v_ordered);
  END IF;
  IF v_channels IS NOT NULL THEN -- the runner's setup is wrong, or the account's quota spent: its channels stop for every runner
    PERFORM herald.pause_channel(channel => u.channel, reason => u.reason, by => 'runner', until => u.until, now => fail.now)
    FROM unnest(v_channels, v_reasons, v_untils) AS u (channel, reason, until);
  END IF;
  IF died THEN
    PERFORM herald._notify(ARRAY['herald_log']);
  END IF;
  IF ready THEN
    PERFORM herald._notify(ARRAY['herald_queue']); -- a retry due at once
  END IF;
  RETURN changed + taken;
END
$$;


--
-- Name: FUNCTION fail(ids bigint[], lease_tokens bigint[], errors text[], error_classes text[], retry_at timestamp with time zone[], error_codes text[], now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.fail(ids bigint[], lease_tokens bigint[], errors text[], error_classes text[], retry_at timestamp with time zone[], error_codes text[], now timestamp with time zone) IS 'Report failed deliveries; SQL decides retry, wait or dead. Returns how many changed.';


--
-- Name: fail(bigint, bigint, text, text, timestamp with time zone, text, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.fail(id bigint, lease_token bigint, error text, error_class text, retry_at timestamp with time zone DEFAULT NULL::timestamp with time zone, error_code text DEFAULT NULL::text, now timestamp with time zone DEFAULT now()) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  SELECT herald._check_not_null(ARRAY['id', 'lease_token', 'error', 'error_class'],
    ARRAY[id IS NOT NULL, lease_token IS NOT NULL, error IS NOT NULL, error_class IS NOT NULL]);
  SELECT herald.fail(ids => ARRAY[id], lease_tokens => ARRAY[lease_token], errors => ARRAY[error],
                     error_classes => ARRAY[error_class], retry_at => ARRAY[retry_at],
                     error_codes => ARRAY[error_code], now => now) = 1
$$;


--
-- Name: FUNCTION fail(id bigint, lease_token bigint, error text, error_class text, retry_at timestamp with time zone, error_code text, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.fail(id bigint, lease_token bigint, error text, error_class text, retry_at timestamp with time zone, error_code text, now timestamp with time zone) IS 'Report one failed delivery; SQL decides retry, wait or dead.';


--
-- Name: forget(text, text, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.forget(kind text, recipient text, now timestamp with time zone DEFAULT now()) RETURNS TABLE(messages integer, copies integer, delivery_events integer, log_events integer, in_flight integer, texts integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => forget.now); -- first: a forged clock changes nothing
  v_key text;
  v_said text; -- the address as free text says it: the regular expression of its forms
  v_n integer;
  v_all bigint[];
  v_copies bigint[];
  v_ids bigint[];
  v_ordered bigint[];
  v_cancelled integer;
BEGIN
  v_key := herald._person_key(kind => forget.kind, recipient => forget.recipient);
  -- Found once; the rest goes by primary key.
  SELECT array_agg(p.id) FILTER (WHERE p.role = 'to'), array_agg(p.id) FILTER (WHERE p.role = 'copy')
  INTO v_all, v_copies
  FROM herald._person_messages(kind => forget.kind, mailbox => v_key) p;

  WITH cancelled AS (
    UPDATE herald.messages m
    SET status = 'cancelled', finished_at = forget.now
    WHERE m.id = ANY (v_all) AND m.status IN ('queued', 'held')
    RETURNING m.id, m.channel, m.recipient, m.ordering_key
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
    SELECT 'cancelled', forget.now, array_agg(x.id ORDER BY x.id), array_agg(x.channel ORDER BY x.id),
           array_agg(herald._key_hash(x.ordering_key, x.recipient) ORDER BY x.id)
    FROM cancelled x HAVING count(*) > 0
  )
  SELECT count(*), array_agg(x.id) FILTER (WHERE x.ordering_key IS NOT NULL) INTO v_cancelled, v_ordered FROM cancelled x;
  IF v_ordered IS NOT NULL THEN
    PERFORM herald._release_after(ids => v_ordered);
  END IF;

  WITH gone AS (
    DELETE FROM herald.messages m
    WHERE m.id = ANY (v_all) AND m.finished_at IS NOT NULL
    RETURNING m.id
  )
  SELECT array_agg(g.id) INTO v_ids FROM gone g;
  messages := coalesce(cardinality(v_ids), 0);
  in_flight := coalesce(cardinality(v_all), 0) - messages; -- being sent: not finished, not cancellable

  copies := 0;
  IF forget.kind = 'email' THEN
    UPDATE herald.messages m
    SET payload = m.payload - 'cc' - 'bcc' || jsonb_strip_nulls(jsonb_build_object(
          'cc', (SELECT jsonb_agg(a) FROM jsonb_array_elements(m.payload -> 'cc') a
                 WHERE herald._mailbox_key(kind => 'email', recipient => a #>> '{}') <> v_key),
          'bcc', (SELECT jsonb_agg(a) FROM jsonb_array_elements(m.payload -> 'bcc') a
                  WHERE herald._mailbox_key(kind => 'email', recipient => a #>> '{}') <> v_key)))
    WHERE m.id = ANY (v_copies);
    GET DIAGNOSTICS copies = ROW_COUNT;
  END IF;

  DELETE FROM herald.delivery_events d
  WHERE d.message_id = ANY (v_ids)
     OR herald._mailbox_key(kind => forget.kind, recipient => d.recipient) = v_key;
  GET DIAGNOSTICS delivery_events = ROW_COUNT;
  DELETE FROM herald.consumer_dead_letters d WHERE d.message_id = ANY (v_ids);
  DELETE FROM herald.recipient_buckets b USING herald.channels c
  WHERE c.name = b.channel AND c.kind = forget.kind AND b.recipient = v_key;

  log_events := 0;
  IF v_ids IS NOT NULL THEN
    WITH redacted AS (
      UPDATE herald.log_statements s
      SET details = CASE WHEN s.details IS NOT NULL THEN
                      ARRAY(SELECT CASE WHEN e.id = ANY (v_ids) THEN '{}'::jsonb ELSE e.detail END
                            FROM unnest(s.message_ids, s.details) WITH ORDINALITY AS e (id, detail, i) ORDER BY e.i) END,
          provider_message_ids = CASE WHEN s.provider_message_ids IS NOT NULL THEN
                      ARRAY(SELECT CASE WHEN e.id = ANY (v_ids) THEN NULL ELSE e.pid END
                            FROM unnest(s.message_ids, s.provider_message_ids) WITH ORDINALITY AS e (id, pid, i) ORDER BY e.i) END
      WHERE s.message_ids && v_ids
      RETURNING (SELECT count(*) FROM unnest(s.message_ids) AS e (id) WHERE e.id = ANY (v_ids)) AS n
    )
    SELECT coalesce(sum(r.n), 0) INTO log_events FROM redacted r;
  END IF;
  -- An e-mail address in any letter case and with any +tag (the mailbox), else the
  -- recipient as given; not inside a longer address or number.
  v_said := CASE WHEN forget.kind = 'email'
    THEN '(?<![A-Za-z0-9._%+-])' || regexp_replace(split_part(v_key, '@', 1), '([^A-Za-z0-9])', '\\\1', 'g')
         || '(\+[^@[:space:]<>"]*)?@' || regexp_replace(split_part(v_key, '@', 2), '([^A-Za-z0-9])', '\\\1', 'g')
         || '(?![A-Za-z0-9-]|\.[A-Za-z0-9])'
    ELSE '(?<![A-Za-z0-9])' || regexp_replace(forget.recipient, '([^A-Za-z0-9])', '\\\1', 'g') || '(?![A-Za-z0-9])' END;
  texts := 0;
  UPDATE herald.messages m
  SET last_error = regexp_replace(m.last_error, v_said, '[forgotten]', 'gi'),
      errors = regexp_replace(m.errors::text, v_said, '[forgotten]', 'gi')::jsonb
  WHERE m.errors <> '[]' AND (m.last_error ~* v_said OR m.errors::text ~* v_said);
  GET DIAGNOSTICS v_n = ROW_COUNT;
  texts := texts + v_n;
  UPDATE herald.log_statements s
  SET details = regexp_replace(s.details::text, v_said, '[forgotten]', 'gi')::jsonb[]
  WHERE s.details IS NOT NULL AND s.details::text ~* v_said;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  texts := texts + v_n;
  UPDATE herald.consumer_dead_letters d
  SET detail = regexp_replace(d.detail::text, v_said, '[forgotten]', 'gi')::jsonb,
      error = regexp_replace(d.error, v_said, '[forgotten]', 'gi')
  WHERE d.detail::text ~* v_said OR d.error ~* v_said;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  texts := texts + v_n;
  UPDATE herald.delivery_events d
  SET reason = regexp_replace(d.reason, v_said, '[forgotten]', 'gi')
  WHERE d.reason ~* v_said;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  texts := texts + v_n;

  IF v_cancelled > 0 THEN
    PERFORM herald._notify(ARRAY['herald_log']);
  END IF;
  RETURN NEXT;
END
$$;


--
-- Name: FUNCTION forget(kind text, recipient text, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.forget(kind text, recipient text, now timestamp with time zone) IS 'Erase a recipient: cancel and delete its messages, their delivery events and log details, its copies in others'' cc and bcc, its budget, its address in others'' texts; the suppression entry stays.';


--
-- Name: history(bigint, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.history(id bigint DEFAULT NULL::bigint, idempotency_key text DEFAULT NULL::text) RETURNS TABLE(at timestamp with time zone, event text, attempt integer, class text, code text, copy boolean)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
  v_id bigint := herald._own_message(id => history.id, idempotency_key => history.idempotency_key);
BEGIN
  RETURN QUERY
  SELECT h.at, h.event, h.attempt, h.class, h.code, h.copy
  FROM herald.messages m
  CROSS JOIN LATERAL (
    SELECT m.created_at AS at, 'accepted'::text AS event, NULL::integer AS attempt, NULL::text AS class,
           NULL::text AS code, false AS copy, 0 AS stage
    UNION ALL
    SELECT (e ->> 'at')::timestamptz, 'failed', (e ->> 'attempt')::integer, e ->> 'class', e ->> 'code', false, 1
    FROM jsonb_array_elements(m.errors) AS e
    UNION ALL
    SELECT m.finished_at, m.status, CASE WHEN m.status = 'sent' THEN m.attempts END, NULL, NULL, false, 2
    WHERE m.finished_at IS NOT NULL
    UNION ALL
    SELECT d.at, d.event, NULL, d.type, d.code,
           d.recipient IS NOT NULL AND lower(d.recipient) <> lower(m.recipient), 3
    FROM herald.delivery_events d
    WHERE d.message_id = m.id
  ) AS h
  WHERE m.id = v_id
  ORDER BY h.at, h.stage;
END
$$;


--
-- Name: FUNCTION history(id bigint, idempotency_key text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.history(id bigint, idempotency_key text) IS 'What happened to one of the caller''s messages, event by event: accepted, each failed attempt (class and code), its end, the providers'' reports after sent.';


--
-- Name: is_suppressed(text, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.is_suppressed(channel text, recipient text) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
  PERFORM herald._check_not_null(ARRAY['channel', 'recipient'], ARRAY[channel IS NOT NULL, recipient IS NOT NULL]);
  RETURN EXISTS (SELECT FROM herald.channels c,
                   herald._suppression(kind => c.kind, recipient => is_suppressed.recipient, now => now())
                 WHERE c.name = is_suppressed.channel);
END
$$;


--
-- Name: FUNCTION is_suppressed(channel text, recipient text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.is_suppressed(channel text, recipient text) IS 'Whether a message to the recipient on the channel would end suppressed now.';


--
-- Name: log_ack(text, integer, bigint, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.log_ack("group" text, partition integer, upto bigint, now timestamp with time zone DEFAULT now()) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => log_ack.now); -- first: a forged clock changes nothing
  cp record;
  log_end bigint;
BEGIN
  cp := herald._consumer_partition("group", partition, false);
  SELECT c.next_offset - 1 INTO log_end FROM herald.log_counter c;
  IF upto IS NULL OR upto > log_end THEN
    PERFORM herald._reject('22V15', 'upto',
      format('%s is beyond the end of the log (offset %s)', coalesce(upto::text, 'NULL'), log_end));
  END IF;
  IF upto <= cp.committed_offset THEN
    RETURN cp.committed_offset;
  END IF;
  UPDATE herald.consumer_offsets o
  SET committed_offset = upto, updated_at = log_ack.now
  WHERE o.group_name = "group" AND o.partition = log_ack.partition;
  RETURN upto;
END
$$;


--
-- Name: FUNCTION log_ack("group" text, partition integer, upto bigint, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.log_ack("group" text, partition integer, upto bigint, now timestamp with time zone) IS 'Commit a consumer group''s progress on one partition.';


--
-- Name: log_dead_letter(text, integer, bigint, text, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.log_dead_letter("group" text, partition integer, "offset" bigint, error text, now timestamp with time zone DEFAULT now()) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => log_dead_letter.now); -- first: a forged clock changes nothing
  cp record;
  ev herald.log;
BEGIN
  IF log_dead_letter."offset" IS NULL THEN
    PERFORM herald._reject('22V15', 'offset', 'must not be NULL');
  END IF;
  IF error IS NULL OR error = '' THEN
    PERFORM herald._reject('22V12', 'error', 'must say why the event is set aside');
  END IF;
  cp := herald._consumer_partition("group", partition, false);
  SELECT l.* INTO ev FROM herald._log_after(cp.committed_offset, cp.partitions, log_dead_letter.partition, 1) l;
  IF ev."offset" IS DISTINCT FROM log_dead_letter."offset" THEN
    PERFORM herald._reject('22V15', 'offset',
      format('%s is not the next event of partition %s (that is %s)',
             coalesce(log_dead_letter."offset"::text, 'NULL'), partition, coalesce(ev."offset"::text, 'none')));
  END IF;
  INSERT INTO herald.consumer_dead_letters
    (group_name, partition, "offset", message_id, kind, channel, at, detail, error, dead_at)
  VALUES ("group", partition, ev."offset", ev.message_id, ev.kind, ev.channel, ev.at, ev.detail,
          left(error, 2000), log_dead_letter.now);
  UPDATE herald.consumer_offsets o
  SET committed_offset = ev."offset", updated_at = log_dead_letter.now
  WHERE o.group_name = "group" AND o.partition = log_dead_letter.partition;
  RETURN true;
END
$$;


--
-- Name: FUNCTION log_dead_letter("group" text, partition integer, "offset" bigint, error text, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.log_dead_letter("group" text, partition integer, "offset" bigint, error text, now timestamp with time zone) IS 'Set aside a partition''s next event into consumer_dead_letters and move past it.';


--
-- Name: log_read(text, integer, integer); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.log_read("group" text, partition integer, max integer DEFAULT 100) RETURNS TABLE("offset" bigint, message_id bigint, kind text, channel text, at timestamp with time zone, detail jsonb)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_column
DECLARE
  cp record;
BEGIN
  IF log_read.max IS NULL OR log_read.max NOT BETWEEN 1 AND 10000 THEN
    PERFORM herald._reject('22V12', 'max', format('%s is outside 1..10000', coalesce(log_read.max::text, 'NULL')));
  END IF;
  PERFORM herald._listening('herald_log'); -- the caller may wait next: producers notify (herald._notify)
  cp := herald._consumer_partition(log_read."group", log_read.partition, true);
  IF cp.committed_offset IS NULL THEN
    RETURN; -- another consumer of this group holds the partition
  END IF;
  IF current_setting('transaction_isolation') = 'read committed' THEN
    PERFORM herald.log_sequence(10000);
  END IF;

  RETURN QUERY
  SELECT l."offset", l.message_id, l.kind, l.channel, l.at, l.detail
  FROM herald._log_after(cp.committed_offset, cp.partitions, log_read.partition, log_read.max) l;
END
$$;


--
-- Name: FUNCTION log_read("group" text, partition integer, max integer); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.log_read("group" text, partition integer, max integer) IS 'The next events of one partition of a consumer group, in offset order.';


--
-- Name: log_sequence(integer); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.log_sequence(max integer DEFAULT 10000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  v_next bigint;
  moved integer;
  bad bigint;
BEGIN
  IF max IS NULL OR max NOT BETWEEN 1 AND 100000 THEN
    PERFORM herald._reject('22V12', 'max', format('%s is outside 1..100000', coalesce(max::text, 'NULL')));
  END IF;
  SELECT c.next_offset INTO v_next FROM herald.log_counter c FOR UPDATE SKIP LOCKED;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;

  WITH batch AS (
    SELECT r.seq, v_next + r.before AS first_offset
    FROM (SELECT q.seq, sum(cardinality(q.message_ids)) OVER (ORDER BY q.seq) - cardinality(q.message_ids) AS before
          FROM herald.log_statements q
          WHERE q.first_offset IS NULL
          ORDER BY q.seq
          LIMIT log_sequence.max) r -- every statement holds at least one event
    WHERE r.before < log_sequence.max
  ), numbered AS (
    UPDATE herald.log_statements s
    SET first_offset = b.first_offset
    FROM batch b
    WHERE s.seq = b.seq
    RETURNING s.seq, s.kind, cardinality(s.message_ids) AS events,
              cardinality(s.channels) = cardinality(s.message_ids)
                AND cardinality(s.key_hashes) = cardinality(s.message_ids)
                AND (s.details IS NULL OR cardinality(s.details) = cardinality(s.message_ids))
                AND (s.provider_message_ids IS NULL OR cardinality(s.provider_message_ids) = cardinality(s.message_ids))
                AND (s.attempts IS NULL OR cardinality(s.attempts) = cardinality(s.message_ids))
                AND s.kind = ANY (herald._log_kinds()) AS well_formed
  )
  SELECT coalesce(sum(n.events), 0), min(n.seq) FILTER (WHERE NOT n.well_formed)
  INTO moved, bad
  FROM numbered n;
  IF bad IS NOT NULL THEN
    RAISE EXCEPTION 'herald: herald.log_statements row % is malformed (unknown kind or arrays of different lengths)', bad
      USING ERRCODE = 'XX000';
  END IF;

  IF moved > 0 THEN
    UPDATE herald.log_counter SET next_offset = v_next + moved;
    PERFORM pg_notify('herald_log', '');
  END IF;
  RETURN moved;
END
$$;


--
-- Name: FUNCTION log_sequence(max integer); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.log_sequence(max integer) IS 'Give committed pending log events their gapless offsets; returns how many.';


--
-- Name: log_truncate(bigint); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.log_truncate(before_offset bigint) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  bound bigint;
  deleted bigint;
  held_seq bigint;
  held_first bigint;
  held_events integer;
BEGIN
  IF before_offset IS NULL THEN
    PERFORM herald._reject('22V12', 'before_offset', 'must not be NULL');
  END IF;
  SELECT least(before_offset, min(o.committed_offset) + 1) INTO bound FROM herald.consumer_offsets o;
  bound := coalesce(bound, before_offset);
  -- The only row that can hold the bound is the last to start below it (offsets are
  -- contiguous). Locked first: if a concurrent truncate has cut it meanwhile, this
  -- reads its new first_offset (or no row, when it now starts at or above the bound).
  SELECT h.seq, h.first_offset, cardinality(h.message_ids)
  INTO held_seq, held_first, held_events
  FROM herald.log_statements h
  WHERE h.first_offset < bound
  ORDER BY h.first_offset DESC
  LIMIT 1
  FOR UPDATE;
  deleted := 0;
  IF held_first + held_events > bound THEN
    UPDATE herald.log_statements s
    SET message_ids = s.message_ids[bound - held_first + 1:],
        channels = s.channels[bound - held_first + 1:],
        key_hashes = s.key_hashes[bound - held_first + 1:],
        details = s.details[bound - held_first + 1:],
        provider_message_ids = s.provider_message_ids[bound - held_first + 1:],
        attempts = s.attempts[bound - held_first + 1:],
        first_offset = bound
    WHERE s.seq = held_seq;
    deleted := bound - held_first;
  END IF;
  -- The cut row now starts at the bound, so it is not among these.
  WITH gone AS (
    DELETE FROM herald.log_statements s
    WHERE s.first_offset < bound
      AND s.first_offset + cardinality(s.message_ids) <= bound
    RETURNING cardinality(s.message_ids) AS events
  )
  SELECT deleted + coalesce(sum(g.events), 0) INTO deleted FROM gone g;
  RETURN deleted;
END
$$;


--
-- Name: FUNCTION log_truncate(before_offset bigint); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.log_truncate(before_offset bigint) IS 'Delete log events below an offset that every consumer group acknowledged.';


--
-- Name: pause_channel(text, text, text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.pause_channel(channel text, reason text, by text DEFAULT 'operator'::text, until timestamp with time zone DEFAULT NULL::timestamp with time zone, now timestamp with time zone DEFAULT now()) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION pause_channel(channel text, reason text, by text, until timestamp with time zone, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.pause_channel(channel text, reason text, by text, until timestamp with time zone, now timestamp with time zone) IS 'Stop handing out a channel''s messages, with a reason; by operator (resumed by an operator) or runner (a probe may resume, not before until).';


--
-- Name: producer_wait(); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.producer_wait() RETURNS integer
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  SELECT nullif(greatest(ceil(extract(epoch FROM p.suspended_until - now())),
                         ceil(extract(epoch FROM herald._over_budget(
                           clear_at => herald._budget_after(clear_at => b.clear_at, now => now(),
                                                            spent => p.send_window / p.send_limit), now => now(),
                           budget_window => p.send_window, budget_limit => p.send_limit))),
                         0), 0)::integer
  FROM herald.producers p
  LEFT JOIN herald.producer_buckets b ON b.producer = p.producer
  WHERE p.producer = herald._producer()
$$;


--
-- Name: FUNCTION producer_wait(); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.producer_wait() IS 'Seconds until the calling producer may enqueue again (its suspension, its send_limit); NULL: now.';


--
-- Name: purge(interval, timestamp with time zone, integer); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.purge(older_than interval, now timestamp with time zone DEFAULT now(), batch_size integer DEFAULT 10000) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => purge.now); -- first: a forged clock changes nothing
  v_messages bigint;
  v_events bigint;
  v_recipients bigint;
  v_producers bigint;
  v_cut timestamptz;
  v_upto bigint;
BEGIN
  IF older_than IS NULL OR older_than < interval '0' THEN
    PERFORM herald._reject('22V12', 'older_than', 'must be a non-negative interval');
  END IF;
  IF batch_size IS NULL OR batch_size NOT BETWEEN 1 AND 1000000 THEN
    PERFORM herald._reject('22V12', 'batch_size', format('%s is outside 1..1000000', batch_size));
  END IF;
  v_cut := purge.now - purge.older_than;
  -- A message finished before the bound was created before it.
  v_upto := herald._id_before(tab => 'herald.messages', col => 'created_at', cut => v_cut);
  DELETE FROM herald.messages m
  WHERE m.ctid = ANY (ARRAY(SELECT f.ctid FROM herald.messages f
                            WHERE f.id <= v_upto AND f.finished_at < v_cut ORDER BY f.id LIMIT purge.batch_size));
  GET DIAGNOSTICS v_messages = ROW_COUNT;
  v_upto := herald._id_before(tab => 'herald.delivery_events', col => 'received_at', cut => v_cut);
  DELETE FROM herald.delivery_events d
  WHERE d.ctid = ANY (ARRAY(SELECT e.ctid FROM herald.delivery_events e
                            WHERE e.id <= v_upto AND e.received_at < v_cut ORDER BY e.id LIMIT purge.batch_size));
  GET DIAGNOSTICS v_events = ROW_COUNT;
  -- Budgets whole again: as if absent.
  DELETE FROM herald.recipient_buckets b
  WHERE b.ctid = ANY (ARRAY(SELECT r.ctid FROM herald.recipient_buckets r WHERE r.clear_at <= purge.now LIMIT purge.batch_size));
  GET DIAGNOSTICS v_recipients = ROW_COUNT;
  DELETE FROM herald.producer_buckets b
  WHERE b.ctid = ANY (ARRAY(SELECT p.ctid FROM herald.producer_buckets p WHERE p.clear_at <= purge.now LIMIT purge.batch_size));
  GET DIAGNOSTICS v_producers = ROW_COUNT;
  RETURN greatest(v_messages, v_events, v_recipients, v_producers);
END
$$;


--
-- Name: FUNCTION purge(older_than interval, now timestamp with time zone, batch_size integer); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.purge(older_than interval, now timestamp with time zone, batch_size integer) IS 'Delete up to a batch each of finished messages and delivery events older than a bound and of budgets whole again; call again while it returns the batch size.';


--
-- Name: quiet_channels(); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.quiet_channels() RETURNS TABLE(channel text, quiet_until timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  SELECT c.name,
         herald._quiet_end(quiet_from => c.quiet_from, quiet_until => c.quiet_until, quiet_days => c.quiet_days,
                           quiet_zone => c.quiet_zone, at => now())
  FROM herald.channels c
  WHERE herald._channel_quiet(quiet_from => c.quiet_from, quiet_until => c.quiet_until, quiet_days => c.quiet_days,
                              quiet_zone => c.quiet_zone, quiet_per_recipient => c.quiet_per_recipient, now => now())
  ORDER BY c.name
$$;


--
-- Name: FUNCTION quiet_channels(); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.quiet_channels() IS 'The channels in their quiet hours or days now, and when those end (NULL: never, as the server does not know its quiet_zone).';


--
-- Name: reap_stale(timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.reap_stale(now timestamp with time zone DEFAULT now()) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => reap_stale.now); -- first: a forged clock changes nothing
  changed integer;
  finished boolean;
  ready boolean;
  v_ordered bigint[];
  v_taken bigint[];
  v_taken_tokens bigint[];
BEGIN
  WITH lapsed AS (
    SELECT e.id, e.lease_token, e.provider_message_id IS NOT NULL AS taken
    FROM herald.messages e
    WHERE e.status = 'processing'
      AND e.lease_expires_at < reap_stale.now
    ORDER BY e.lease_expires_at
    LIMIT 10000
    FOR NO KEY UPDATE SKIP LOCKED
  ), reaped AS (
    UPDATE herald.messages m
    SET status = d.next_status,
        run_at = CASE WHEN d.next_status = 'queued' THEN reap_stale.now ELSE m.run_at END,
        finished_at = CASE WHEN d.next_status <> 'queued' THEN reap_stale.now END,
        lease_token = NULL,
        lease_expires_at = NULL,
        last_error = 'lease expired',
        last_error_class = 'transient',
        last_error_code = 'lease_expired',
        errors = herald._append_error(m.errors, jsonb_build_object(
                   'at', reap_stale.now, 'attempt', m.attempts, 'class', 'transient',
                   'code', 'lease_expired', 'error', 'lease expired', 'worker', m.leased_by))
    FROM (SELECT x.id, CASE WHEN x.attempts >= x.max_attempts THEN 'dead'
                            WHEN x.expires_at <= reap_stale.now THEN 'expired'
                            ELSE 'queued' END AS next_status
          FROM lapsed l JOIN herald.messages x ON x.id = l.id
          WHERE NOT l.taken) AS d
    WHERE m.id = d.id
    RETURNING m.id, m.status, m.channel, m.recipient, m.ordering_key, m.attempts
  ), taken AS ( -- a provider reported taking it while the lease ran (record_delivery_events): sent
    SELECT l.id, l.lease_token FROM lapsed l WHERE l.taken
  ), overdue AS (
    SELECT e.id
    FROM herald.messages e
    WHERE e.status IN ('queued', 'held')
      AND e.expires_at <= reap_stale.now
    ORDER BY e.expires_at
    LIMIT 10000
    FOR NO KEY UPDATE SKIP LOCKED
  ), expired AS (
    UPDATE herald.messages m
    SET status = 'expired', finished_at = reap_stale.now
    FROM overdue o
    WHERE m.id = o.id
    RETURNING m.id, m.status, m.channel, m.recipient, m.ordering_key, m.attempts
  ), changes AS (
    SELECT * FROM reaped UNION ALL SELECT * FROM expired
  ), appended AS (
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes, details)
    SELECT r.status, reap_stale.now, array_agg(r.id ORDER BY r.id), array_agg(r.channel ORDER BY r.id),
           array_agg(herald._key_hash(r.ordering_key, r.recipient) ORDER BY r.id),
           array_agg(herald._event_detail(r.status, NULL, 'transient', 'lease expired', r.attempts) ORDER BY r.id)
    FROM changes r
    WHERE r.status IN ('dead', 'expired')
    GROUP BY r.status
  )
  SELECT count(*), bool_or(r.status <> 'queued'), bool_or(r.status = 'queued'),
         array_agg(r.id) FILTER (WHERE r.ordering_key IS NOT NULL AND r.status <> 'queued'),
         (SELECT array_agg(k.id) FROM taken k), (SELECT array_agg(k.lease_token) FROM taken k)
  INTO changed, finished, ready, v_ordered, v_taken, v_taken_tokens
  FROM changes r;
  IF v_taken IS NOT NULL THEN
    changed := changed + herald._mark_sent(ids => v_taken, lease_tokens => v_taken_tokens,
                                           provider_message_ids => NULL, now => reap_stale.now);
  END IF;
  IF finished THEN
    PERFORM herald._notify(ARRAY['herald_log']);
  END IF;
  IF ready THEN
    PERFORM herald._notify(ARRAY['herald_queue']);
  END IF;

  IF v_ordered IS NOT NULL THEN
    PERFORM herald._release_after(ids => v_ordered);
  END IF;
  IF EXISTS (SELECT FROM herald.ordering_rechecks) THEN
    PERFORM herald._settle_rechecks();
  END IF;
  RETURN changed;
END
$$;


--
-- Name: FUNCTION reap_stale(now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.reap_stale(now timestamp with time zone) IS 'Take back messages whose lease expired (queued again, dead or expired) and end queued messages past their expires_at.';


--
-- Name: recipient_wait(text, text, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.recipient_wait(channel text, recipient text, now timestamp with time zone DEFAULT now()) RETURNS integer
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_variable
DECLARE
  clock_ok boolean := herald._check_clock(now => recipient_wait.now); -- first: a forged clock changes nothing
  v_channel herald.channels;
  v_seconds numeric;
BEGIN
  PERFORM herald._check_not_null(fields => ARRAY['channel', 'recipient'],
                                 present => ARRAY[channel IS NOT NULL, recipient IS NOT NULL]);
  SELECT * INTO v_channel FROM herald.channels c WHERE c.name = recipient_wait.channel;
  IF NOT FOUND THEN
    PERFORM herald._reject(code => '22V01', field => 'channel', message => format('unknown channel %L', channel));
  END IF;
  -- One more message moves each budget's clear_at on by a step; the wait is how far the
  -- furthest runs over: the recipient's (recipient_limit), its range's (range_limit).
  SELECT max(extract(epoch FROM herald._over_budget(
           clear_at => herald._budget_after(clear_at => b.clear_at, now => recipient_wait.now, spent => w.span / w.lim),
           now => recipient_wait.now, budget_window => w.span, budget_limit => w.lim)))
  INTO v_seconds
  FROM (VALUES (herald._mailbox_key(kind => v_channel.kind, recipient => recipient_wait.recipient),
                v_channel.recipient_limit, v_channel.recipient_window),
               (herald._range_key(channel => v_channel, recipient => recipient_wait.recipient),
                v_channel.range_limit, v_channel.range_window)) AS w (key, lim, span)
  JOIN herald.recipient_buckets b ON b.channel = v_channel.name AND b.recipient = w.key
  WHERE w.lim IS NOT NULL;
  IF v_seconds IS NULL OR v_seconds <= 0 THEN
    RETURN NULL;
  END IF;
  RETURN ceil(v_seconds)::integer;
END
$$;


--
-- Name: FUNCTION recipient_wait(channel text, recipient text, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.recipient_wait(channel text, recipient text, now timestamp with time zone) IS 'Seconds until a recipient at its channel''s recipient_limit may be sent one more message; NULL: now.';


--
-- Name: record_copy_refusal(bigint, text, text, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.record_copy_refusal(message_id bigint, recipient text, code text, now timestamp with time zone DEFAULT now()) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => record_copy_refusal.now); -- first: a forged clock changes nothing
  r record;
BEGIN
  PERFORM herald._check_not_null(ARRAY['message_id', 'recipient', 'code'],
    ARRAY[record_copy_refusal.message_id IS NOT NULL, record_copy_refusal.recipient IS NOT NULL, record_copy_refusal.code IS NOT NULL]);
  IF length(record_copy_refusal.code) > 64 THEN
    PERFORM herald._reject(code => '22V12', field => 'code', message => 'is over 64 characters');
  END IF;
  IF NOT EXISTS (SELECT FROM herald.messages m JOIN herald.channels c ON c.name = m.channel
                 WHERE m.id = record_copy_refusal.message_id
                   AND herald._suppression_key(kind => c.kind, recipient => m.recipient)
                       <> herald._suppression_key(kind => c.kind, recipient => record_copy_refusal.recipient)) THEN
    RETURN false; -- no such message, or its own recipient
  END IF;
  SELECT * INTO r FROM herald.record_delivery_events(source => 'send', now => record_copy_refusal.now,
    events => jsonb_build_array(jsonb_build_object(
      'event_id', 'copy ' || record_copy_refusal.message_id || ' ' || lower(record_copy_refusal.recipient),
      'message_id', record_copy_refusal.message_id, 'recipient', record_copy_refusal.recipient,
      'event', 'undelivered', 'code', record_copy_refusal.code)));
  RETURN r.unknown = 0;
END
$$;


--
-- Name: FUNCTION record_copy_refusal(message_id bigint, recipient text, code text, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.record_copy_refusal(message_id bigint, recipient text, code text, now timestamp with time zone) IS 'Record a provider''s refusal of one copy (cc, bcc) of a sent message: the copy is suppressed when the code rules it out.';


--
-- Name: record_delivery_events(text, jsonb, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.record_delivery_events(source text, events jsonb, now timestamp with time zone DEFAULT now()) RETURNS TABLE(recorded integer, duplicates integer, unknown integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
#variable_conflict use_variable
DECLARE
  clock_ok boolean := herald._check_clock(now => record_delivery_events.now); -- first: a forged clock changes nothing
  fields constant text[] := '{event_id,message_id,provider_message_id,recipient,event,type,code,reason,at}';
  kinds constant text[] := '{processed,delivered,deferred,bounced,complained,unsubscribed,undelivered}';
  n integer;
  i integer;
  e jsonb;
  p text;
  k text;
  at_ok boolean := true;
  v_logged boolean;
  v_waiting bigint[];
  v_waiting_pids text[];
  v_noted bigint[];
  v_noted_pids text[];
BEGIN
  PERFORM herald._check_source(source => source);
  IF events IS NULL OR jsonb_typeof(events) <> 'array' OR jsonb_array_length(events) NOT BETWEEN 1 AND 10000 THEN
    PERFORM herald._reject(code => '22V18', field => 'events', message => 'must be a JSON array of 1 to 10000 event objects');
  END IF;
  n := jsonb_array_length(events);
  BEGIN -- every 'at' in one statement; the loop looks for the bad one only when there is one
    PERFORM max((x ->> 'at')::timestamptz) FROM jsonb_array_elements(events) AS x;
  EXCEPTION WHEN data_exception THEN
    at_ok := false;
  END;
  FOR i IN 0 .. n - 1 LOOP -- expressions only (no query) unless an event is refused
    e := events -> i;
    p := 'events[' || i || ']';
    IF jsonb_typeof(e) <> 'object' THEN
      PERFORM herald._reject(code => '22V18', field => p, message => 'must be a JSON object');
    END IF;
    IF e - fields <> '{}' THEN
      k := (SELECT min(f) FROM jsonb_object_keys(e - fields) AS f);
      PERFORM herald._reject(code => '22V18', field => p || '.' || k, message => 'is not an event field',
        hint => array_to_string(fields, ', '));
    END IF;
    IF jsonb_typeof(e -> 'event_id') IS DISTINCT FROM 'string' OR length(e ->> 'event_id') NOT BETWEEN 1 AND 255 THEN
      PERFORM herald._reject(code => '22V18', field => p || '.event_id', message => 'must be a string of 1 to 255 characters');
    END IF;
    IF NOT coalesce(e ->> 'event' = ANY (kinds), false) THEN -- only a JSON string reads as one of them
      PERFORM herald._reject(code => '22V18', field => p || '.event', message => 'must be one of the event names',
        hint => array_to_string(kinds, ', '));
    END IF;
    IF e ? 'message_id' AND (jsonb_typeof(e -> 'message_id') <> 'number' OR (e ->> 'message_id') !~ '^[0-9]{1,18}$') THEN
      PERFORM herald._reject(code => '22V18', field => p || '.message_id', message => 'must be a herald message id');
    END IF;
    FOREACH k IN ARRAY ARRAY['provider_message_id', 'recipient', 'code', 'reason'] LOOP
      IF e ? k AND jsonb_typeof(e -> k) NOT IN ('string', 'null') THEN
        PERFORM herald._reject(code => '22V18', field => p || '.' || k, message => 'must be a string');
      END IF;
    END LOOP;
    IF length(e ->> 'code') > 64 OR length(e ->> 'provider_message_id') > 255 OR length(e ->> 'recipient') NOT BETWEEN 1 AND 320 THEN
      PERFORM herald._reject(code => '22V18',
        field => p || '.' || CASE WHEN length(e ->> 'code') > 64 THEN 'code'
                                  WHEN length(e ->> 'provider_message_id') > 255 THEN 'provider_message_id' ELSE 'recipient' END,
        message => 'is too long (code: 64, provider_message_id: 255, recipient: 1 to 320 characters)');
    END IF;
    IF e ? 'type' AND ((e -> 'type') NOT IN ('"hard"', '"soft"') OR e ->> 'event' <> 'bounced') THEN
      PERFORM herald._reject(code => '22V18', field => p || '.type', message => 'must be hard or soft, for a bounced event');
    END IF;
    IF NOT at_ok AND e ? 'at' THEN
      BEGIN
        PERFORM (e ->> 'at')::timestamptz;
      EXCEPTION WHEN data_exception THEN
        PERFORM herald._reject(code => '22V18', field => p || '.at', message => 'must be a timestamp string');
      END;
    END IF;
  END LOOP;

  -- One statement: each event stored once, matched or not; then, from the stored rows
  -- (not read back from herald.delivery_events), the messages' outcomes, the receipts
  -- in the log and the suppressions.
  WITH input AS (
    SELECT x ->> 'event_id' AS event_id, (x ->> 'message_id')::bigint AS message_id,
           x ->> 'provider_message_id' AS provider_message_id, x ->> 'recipient' AS recipient, x ->> 'event' AS event,
           CASE WHEN x ->> 'event' = 'bounced' THEN coalesce(x ->> 'type', 'hard') END AS type,
           x ->> 'code' AS code, left(x ->> 'reason', 500) AS reason,
           coalesce((x ->> 'at')::timestamptz, record_delivery_events.now) AS at
    FROM jsonb_array_elements(events) AS x
  ), stored AS (
    INSERT INTO herald.delivery_events AS d (source, event_id, message_id, recipient, event, type, code, reason, at, received_at)
    SELECT source, i.event_id, m.id, i.recipient, i.event, i.type, i.code, i.reason, i.at, record_delivery_events.now
    FROM input i
    LEFT JOIN herald.messages m -- the message, when the event is about it or one of its copies
      ON m.id = i.message_id
     AND (i.provider_message_id IS NULL OR m.provider_message_id IS NULL OR i.provider_message_id = m.provider_message_id
          OR starts_with(i.provider_message_id, m.provider_message_id || '.'))
     AND (i.recipient IS NULL
          OR EXISTS (SELECT FROM herald.channels c
                     WHERE c.name = m.channel
                       AND (herald._suppression_key(kind => c.kind, recipient => i.recipient)
                            = herald._suppression_key(kind => c.kind, recipient => m.recipient)
                            OR (c.kind = 'email'
                                AND herald._suppression_key(kind => 'email', recipient => i.recipient)
                                    IN (SELECT herald._suppression_key(kind => 'email', recipient => c.address)
                                        FROM herald._copies(payload => m.payload) AS c)))))
    -- processed says no more than that the provider took the message: kept when it
    -- settles a send (the message is being sent, or waits for a retry) or is unmatched
    WHERE i.event <> 'processed' OR m.id IS NULL OR m.status = 'processing' OR (m.status = 'queued' AND m.attempts > 0)
    ON CONFLICT ON CONSTRAINT delivery_events_once DO NOTHING
    RETURNING d.id, d.event_id, d.message_id, d.recipient, d.event, d.type, d.code, d.at
  ), matched AS ( -- copy: the event is about a cc or bcc address, not the message's recipient
    SELECT s.id, s.event_id, s.message_id, s.event, s.type, s.code, s.at, m.channel, m.recipient, m.ordering_key, c.kind,
           m.status, m.attempts,
           herald._suppression_key(kind => c.kind, recipient => coalesce(s.recipient, m.recipient)) AS suppression_key,
           s.recipient IS NOT NULL AND herald._suppression_key(kind => c.kind, recipient => s.recipient)
                                       <> herald._suppression_key(kind => c.kind, recipient => m.recipient) AS copy
    FROM stored s
    JOIN herald.messages m ON m.id = s.message_id
    JOIN herald.channels c ON c.name = m.channel
  ), best AS ( -- the message's outcome: the gravest new event of its own, unless a graver one is there
    SELECT DISTINCT ON (s.message_id) s.message_id, s.event, s.type, s.code, s.at,
           herald._outcome_rank(outcome => s.event, outcome_type => s.type) AS rank
    FROM matched s
    WHERE NOT s.copy AND s.event <> 'processed'
    ORDER BY s.message_id, 6 DESC, s.at DESC
  ), outcome AS (
    UPDATE herald.messages m
    SET outcome = b.event, outcome_type = b.type, outcome_code = b.code, outcome_at = b.at
    FROM best b
    WHERE m.id = b.message_id
      AND (m.outcome IS NULL
           OR b.rank > herald._outcome_rank(outcome => m.outcome, outcome_type => m.outcome_type)
           OR (b.rank = herald._outcome_rank(outcome => m.outcome, outcome_type => m.outcome_type) AND b.at >= m.outcome_at))
  ), appended AS ( -- receipts in the ordered log, one row per event name, in message id order
    INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes, details)
    SELECT s.event, record_delivery_events.now, array_agg(s.message_id ORDER BY s.message_id, s.id),
           array_agg(s.channel ORDER BY s.message_id, s.id),
           array_agg(herald._key_hash(s.ordering_key, s.recipient) ORDER BY s.message_id, s.id),
           array_agg(jsonb_strip_nulls(jsonb_build_object('type', s.type, 'code', s.code, 'at', s.at, 'source', source))
                     ORDER BY s.message_id, s.id)
    FROM matched s
    WHERE NOT s.copy AND s.event <> 'processed'
    GROUP BY s.event
    RETURNING 1
  ), suppressed AS ( -- outcomes that rule the address out (the recipient's or a copy's) stop future sends
    INSERT INTO herald.suppressions AS x (kind, recipient, reason, source, created_at)
    SELECT DISTINCT ON (s.kind, s.suppression_key) s.kind, s.suppression_key, r.reason, source, record_delivery_events.now
    FROM matched s
    CROSS JOIN LATERAL (SELECT herald._suppression_reason(kind => s.kind, event => s.event, type => s.type,
                                                          code => s.code) AS reason) AS r
    WHERE r.reason IS NOT NULL
    ORDER BY s.kind, s.suppression_key, s.id
    ON CONFLICT ON CONSTRAINT suppressions_pkey DO NOTHING
  ), taken AS ( -- the provider has a message herald has not marked sent: it went through
    SELECT DISTINCT ON (s.message_id) s.message_id, s.status,
           (SELECT i.provider_message_id FROM input i WHERE i.event_id = s.event_id LIMIT 1) AS provider_message_id
    FROM matched s
    WHERE NOT s.copy AND (s.status = 'processing' OR (s.status = 'queued' AND s.attempts > 0))
    ORDER BY s.message_id, 3 NULLS LAST, s.id
  )
  SELECT count(*)::integer, count(*) FILTER (WHERE s.message_id IS NULL)::integer,
         EXISTS (SELECT FROM appended),
         (SELECT array_agg(t.message_id) FROM taken t WHERE t.status = 'queued'),
         (SELECT array_agg(t.provider_message_id) FROM taken t WHERE t.status = 'queued'),
         (SELECT array_agg(t.message_id) FROM taken t WHERE t.provider_message_id IS NOT NULL),
         (SELECT array_agg(t.provider_message_id) FROM taken t WHERE t.provider_message_id IS NOT NULL)
  INTO recorded, unknown, v_logged, v_waiting, v_waiting_pids, v_noted, v_noted_pids
  FROM stored s;
  IF v_waiting IS NOT NULL THEN -- an attempt in doubt (or cut short) went through: no retry
    PERFORM herald._mark_sent(ids => v_waiting, lease_tokens => NULL, provider_message_ids => v_waiting_pids,
                              now => record_delivery_events.now);
  END IF;
  IF v_noted IS NOT NULL THEN -- being sent (a claim took it first, if it waited): fail and reap_stale read the id as sent
    UPDATE herald.messages m
    SET provider_message_id = u.provider_message_id
    FROM unnest(v_noted, v_noted_pids) AS u(id, provider_message_id)
    WHERE m.id = u.id AND m.status = 'processing' AND m.provider_message_id IS NULL;
  END IF;
  duplicates := n - recorded;
  recorded := recorded - unknown;
  IF v_logged THEN
    PERFORM herald._notify(ARRAY['herald_log']);
  END IF;
  RETURN NEXT;
END
$_$;


--
-- Name: FUNCTION record_delivery_events(source text, events jsonb, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.record_delivery_events(source text, events jsonb, now timestamp with time zone) IS 'Record providers'' delivery events once each: outcomes, log receipts, suppressions, and sends in doubt the provider took marked sent.';


--
-- Name: record_opt_out(text, text, boolean, text, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.record_opt_out(kind text, recipient text, opted_out boolean, source text, now timestamp with time zone DEFAULT now()) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_variable
DECLARE
  clock_ok boolean := herald._check_clock(now => record_opt_out.now); -- first: a forged clock changes nothing
  changed integer;
BEGIN
  PERFORM herald._check_not_null(ARRAY['kind', 'recipient', 'opted_out', 'source'],
    ARRAY[kind IS NOT NULL, recipient IS NOT NULL, opted_out IS NOT NULL, source IS NOT NULL]);
  PERFORM herald._check_kind(kind => kind);
  IF length(recipient) NOT BETWEEN 1 AND 320 THEN
    PERFORM herald._reject(code => '22V12', field => 'recipient', message => 'must be 1 to 320 characters');
  END IF;
  PERFORM herald._check_source(source => source);
  IF opted_out THEN
    INSERT INTO herald.suppressions (kind, recipient, reason, source, created_at)
    VALUES (kind, herald._suppression_key(kind => kind, recipient => recipient), 'unsubscribed', source, record_opt_out.now)
    ON CONFLICT ON CONSTRAINT suppressions_pkey DO NOTHING;
  ELSE
    DELETE FROM herald.suppressions s
    WHERE s.kind = record_opt_out.kind
      AND s.recipient = herald._suppression_key(kind => record_opt_out.kind, recipient => record_opt_out.recipient)
      AND s.reason = 'unsubscribed';
  END IF;
  GET DIAGNOSTICS changed = ROW_COUNT;
  RETURN changed > 0;
END
$$;


--
-- Name: FUNCTION record_opt_out(kind text, recipient text, opted_out boolean, source text, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.record_opt_out(kind text, recipient text, opted_out boolean, source text, now timestamp with time zone) IS 'A recipient said STOP (suppress as unsubscribed) or START (lift an unsubscribe, not a bounce or an operator''s entry).';


--
-- Name: redispatch_callbacks(timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.redispatch_callbacks(now timestamp with time zone DEFAULT now()) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION redispatch_callbacks(now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.redispatch_callbacks(now timestamp with time zone) IS 'Send the status callbacks that dispatch_callbacks set aside, once what refused them is fixed.';


--
-- Name: redrive(bigint[], timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.redrive(ids bigint[], now timestamp with time zone DEFAULT now()) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => redrive.now); -- first: a forged clock changes nothing
  changed integer;
BEGIN
  IF redrive.ids IS NULL THEN
    PERFORM herald._reject(code => '22V12', field => 'ids', message => 'must not be NULL');
  END IF;
  UPDATE herald.messages m
  SET status = 'queued', attempts = 0, run_at = redrive.now, finished_at = NULL
  WHERE m.id = ANY (redrive.ids) AND m.status = 'dead' AND m.outcome IS NULL;
  GET DIAGNOSTICS changed = ROW_COUNT;
  IF changed > 0 THEN
    PERFORM herald._notify(ARRAY['herald_queue']);
  END IF;
  RETURN changed;
END
$$;


--
-- Name: FUNCTION redrive(ids bigint[], now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.redrive(ids bigint[], now timestamp with time zone) IS 'Queue dead messages again with their attempts reset.';


--
-- Name: refresh_statistics(); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.refresh_statistics() RETURNS text[]
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  t regclass;
  done text[] := '{}';
BEGIN
  FOR t IN
    SELECT c.oid::regclass
    FROM pg_class c
    WHERE c.oid IN ('herald.messages'::regclass, 'herald.log_statements'::regclass)
      AND c.relpages < 1024
      AND pg_relation_size(c.oid) / current_setting('block_size')::bigint
          > greatest(2 * c.relpages, 16)
    ORDER BY c.relname DESC -- messages first: it matters most
  LOOP
    BEGIN
      EXECUTE format('LOCK TABLE %s IN SHARE UPDATE EXCLUSIVE MODE NOWAIT', t);
    EXCEPTION WHEN lock_not_available THEN
      CONTINUE;
    END;
    EXECUTE format('ANALYZE %s', t);
    done := done || t::text;
  END LOOP;
  RETURN done;
END
$$;


--
-- Name: FUNCTION refresh_statistics(); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.refresh_statistics() IS 'ANALYZE herald''s tables while their statistics describe a table they have outgrown.';


--
-- Name: resume_channel(text, text, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.resume_channel(channel text, by text DEFAULT 'operator'::text, now timestamp with time zone DEFAULT now()) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION resume_channel(channel text, by text, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.resume_channel(channel text, by text, now timestamp with time zone) IS 'Hand out a paused channel''s messages again: any pause (operator) or only a runner''s, from its paused_until on (a probe).';


--
-- Name: status(bigint, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.status(id bigint DEFAULT NULL::bigint, idempotency_key text DEFAULT NULL::text) RETURNS SETOF herald.message_status
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  v_id bigint := herald._own_message(id => status.id, idempotency_key => status.idempotency_key);
BEGIN
  RETURN QUERY
  SELECT s.* FROM herald.messages m, herald._message_status(m) s WHERE m.id = v_id;
END
$$;


--
-- Name: FUNCTION status(id bigint, idempotency_key text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.status(id bigint, idempotency_key text) IS 'What happened to one of the caller''s messages (by id or idempotency key): state, attempts, times, deadline, failure class and code, receipt, delivery outcome.';


--
-- Name: subject_access(text, text); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.subject_access(kind text, recipient text) RETURNS TABLE(message_id bigint, role text, producer text, channel text, status text, created_at timestamp with time zone, finished_at timestamp with time zone, outcome text, outcome_at timestamp with time zone, recipient_zone text, payload jsonb, suppressed boolean)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
DECLARE
  v_key text;
BEGIN
  v_key := herald._person_key(kind => subject_access.kind, recipient => subject_access.recipient);
  RETURN QUERY
  SELECT m.id, p.role, m.producer::text, m.channel, m.status, m.created_at, m.finished_at,
         CASE WHEN p.role = 'to' THEN m.outcome END, CASE WHEN p.role = 'to' THEN m.outcome_at END,
         CASE WHEN p.role = 'to' THEN m.recipient_zone END, m.payload,
         EXISTS (SELECT FROM herald._suppression(kind => subject_access.kind, recipient => subject_access.recipient, now => now()))
  FROM herald._person_messages(kind => subject_access.kind, mailbox => v_key) p
  JOIN herald.messages m ON m.id = p.id
  ORDER BY m.created_at, m.id;
END
$$;


--
-- Name: FUNCTION subject_access(kind text, recipient text); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.subject_access(kind text, recipient text) IS 'What herald holds about a person (right of access): the messages to them or copying them, with state, outcome and payload.';


--
-- Name: suppress(text, text[], text, text, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.suppress(kind text, recipients text[], reason text DEFAULT 'manual'::text, source text DEFAULT 'operator'::text, expires_at timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_variable
DECLARE
  changed integer;
BEGIN
  PERFORM herald._check_not_null(ARRAY['kind', 'recipients', 'reason', 'source'],
    ARRAY[kind IS NOT NULL, recipients IS NOT NULL, reason IS NOT NULL, source IS NOT NULL]);
  PERFORM herald._check_kind(kind => kind);
  IF reason NOT IN ('bounced', 'complained', 'unsubscribed', 'manual') THEN
    PERFORM herald._reject(code => '22V12', field => 'reason', message => format('%L is not a suppression reason', reason),
      hint => 'manual, bounced, complained or unsubscribed');
  END IF;
  IF EXISTS (SELECT FROM unnest(recipients) AS r WHERE r IS NULL OR octet_length(r) NOT BETWEEN 1 AND 2048) THEN
    PERFORM herald._reject(code => '22V12', field => 'recipients', message => 'a recipient is NULL, empty or over 2048 bytes');
  END IF;
  INSERT INTO herald.suppressions AS s (kind, recipient, reason, source, created_at, expires_at)
  SELECT DISTINCT suppress.kind, herald._suppression_key(kind => suppress.kind, recipient => r), suppress.reason,
         suppress.source, now(), suppress.expires_at
  FROM unnest(recipients) AS r
  ON CONFLICT ON CONSTRAINT suppressions_pkey DO UPDATE
    SET reason = excluded.reason, source = excluded.source, expires_at = excluded.expires_at;
  GET DIAGNOSTICS changed = ROW_COUNT;
  RETURN changed;
END
$$;


--
-- Name: FUNCTION suppress(kind text, recipients text[], reason text, source text, expires_at timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.suppress(kind text, recipients text[], reason text, source text, expires_at timestamp with time zone) IS 'Stop sending to recipients of a channel kind (their unsent messages end suppressed).';


--
-- Name: unsubscribe(bigint, timestamp with time zone); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.unsubscribe(message_id bigint, now timestamp with time zone DEFAULT now()) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
  clock_ok boolean := herald._check_clock(now => unsubscribe.now); -- first: a forged clock changes nothing
BEGIN
  IF unsubscribe.message_id IS NULL THEN
    PERFORM herald._reject(code => '22V12', field => 'message_id', message => 'must not be NULL');
  END IF;
  PERFORM FROM herald.messages m WHERE m.id = unsubscribe.message_id FOR KEY SHARE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM herald.record_delivery_events(source => 'unsubscribe', now => unsubscribe.now,
    events => jsonb_build_array(jsonb_build_object('event_id', unsubscribe.message_id::text,
                                                   'message_id', unsubscribe.message_id, 'event', 'unsubscribed')));
  RETURN true;
END
$$;


--
-- Name: FUNCTION unsubscribe(message_id bigint, now timestamp with time zone); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.unsubscribe(message_id bigint, now timestamp with time zone) IS 'Record that a message''s recipient unsubscribed (one-click link): outcome, log event, suppression; false when the message is gone.';


--
-- Name: unsuppress(text, text[]); Type: FUNCTION; Schema: herald; Owner: -
--

CREATE FUNCTION herald.unsuppress(kind text, recipients text[]) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_variable
DECLARE
  changed integer;
BEGIN
  PERFORM herald._check_not_null(ARRAY['kind', 'recipients'], ARRAY[kind IS NOT NULL, recipients IS NOT NULL]);
  DELETE FROM herald.suppressions s
  WHERE s.kind = unsuppress.kind
    AND s.recipient = ANY (ARRAY(SELECT herald._suppression_key(kind => unsuppress.kind, recipient => r) FROM unnest(recipients) AS r));
  GET DIAGNOSTICS changed = ROW_COUNT;
  RETURN changed;
END
$$;


--
-- Name: FUNCTION unsuppress(kind text, recipients text[]); Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON FUNCTION herald.unsuppress(kind text, recipients text[]) IS 'Send to recipients of a channel kind again.';


--
-- Name: consumer_dead_letters; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.consumer_dead_letters (
    group_name text NOT NULL,
    partition integer NOT NULL,
    "offset" bigint NOT NULL,
    message_id bigint NOT NULL,
    kind text NOT NULL,
    channel text NOT NULL,
    at timestamp with time zone NOT NULL,
    detail jsonb NOT NULL,
    error text NOT NULL,
    dead_at timestamp with time zone NOT NULL
);


--
-- Name: TABLE consumer_dead_letters; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.consumer_dead_letters IS 'Log events a consumer group could not process, with the error.';


--
-- Name: consumer_groups; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.consumer_groups (
    name text NOT NULL,
    partitions integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT consumer_groups_name_format CHECK ((name ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$'::text)),
    CONSTRAINT consumer_groups_partitions_range CHECK (((partitions >= 1) AND (partitions <= 256)))
);


--
-- Name: TABLE consumer_groups; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.consumer_groups IS 'Consumer groups of herald.log and their partition counts.';


--
-- Name: consumer_offsets; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.consumer_offsets (
    group_name text NOT NULL,
    partition integer NOT NULL,
    committed_offset bigint NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT consumer_offsets_committed_nonnegative CHECK ((committed_offset >= 0))
);


--
-- Name: TABLE consumer_offsets; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.consumer_offsets IS 'Committed offset per consumer group and partition.';


--
-- Name: log_counter; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.log_counter (
    singleton boolean DEFAULT true NOT NULL,
    next_offset bigint DEFAULT 1 NOT NULL,
    CONSTRAINT log_counter_singleton CHECK (singleton)
);


--
-- Name: TABLE log_counter; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.log_counter IS 'Next log offset; its row lock serialises sequencing runs.';


--
-- Name: log_statements; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.log_statements (
    seq bigint NOT NULL,
    kind text NOT NULL,
    at timestamp with time zone NOT NULL,
    message_ids bigint[] NOT NULL,
    channels text[] NOT NULL,
    key_hashes integer[] NOT NULL,
    details jsonb[],
    first_offset bigint,
    provider_message_ids text[],
    attempts integer[]
)
WITH (autovacuum_vacuum_scale_factor='0.01', autovacuum_vacuum_insert_scale_factor='0.01', autovacuum_vacuum_cost_delay='0');
ALTER TABLE ONLY herald.log_statements ALTER COLUMN message_ids SET STATISTICS 0;
ALTER TABLE ONLY herald.log_statements ALTER COLUMN message_ids SET COMPRESSION lz4;
ALTER TABLE ONLY herald.log_statements ALTER COLUMN channels SET STATISTICS 0;
ALTER TABLE ONLY herald.log_statements ALTER COLUMN channels SET COMPRESSION lz4;
ALTER TABLE ONLY herald.log_statements ALTER COLUMN key_hashes SET STATISTICS 0;
ALTER TABLE ONLY herald.log_statements ALTER COLUMN key_hashes SET COMPRESSION lz4;
ALTER TABLE ONLY herald.log_statements ALTER COLUMN details SET STATISTICS 0;
ALTER TABLE ONLY herald.log_statements ALTER COLUMN details SET COMPRESSION lz4;
ALTER TABLE ONLY herald.log_statements ALTER COLUMN provider_message_ids SET STATISTICS 0;
ALTER TABLE ONLY herald.log_statements ALTER COLUMN provider_message_ids SET COMPRESSION lz4;
ALTER TABLE ONLY herald.log_statements ALTER COLUMN attempts SET STATISTICS 0;
ALTER TABLE ONLY herald.log_statements ALTER COLUMN attempts SET COMPRESSION lz4;


--
-- Name: TABLE log_statements; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.log_statements IS 'Lifecycle events, one row per statement that wrote them; first_offset is NULL until herald.log_sequence gives the row its offsets. herald.log shows one row per event.';


--
-- Name: COLUMN log_statements.details; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.log_statements.details IS 'Event i''s detail; NULL when every event''s detail is {} or is built from the typed arrays.';


--
-- Name: COLUMN log_statements.first_offset; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.log_statements.first_offset IS 'Offset of the first event (event i, counted from 1, has first_offset + i - 1); NULL while pending.';


--
-- Name: COLUMN log_statements.provider_message_ids; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.log_statements.provider_message_ids IS 'sent events: the provider message id of event i (NULL: none); NULL when no event of the row has one.';


--
-- Name: COLUMN log_statements.attempts; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.log_statements.attempts IS 'sent events: the attempts of event i; with it set, details is NULL and each event''s detail is built when read.';


--
-- Name: consumer_lag; Type: VIEW; Schema: herald; Owner: -
--

CREATE VIEW herald.consumer_lag AS
 SELECT o.group_name,
    o.partition,
    o.committed_offset,
    (c.next_offset - 1) AS log_end,
    ((c.next_offset - 1) - o.committed_offset) AS lag,
    ( SELECT COALESCE(sum(cardinality(p.message_ids)), (0)::bigint) AS "coalesce"
           FROM herald.log_statements p
          WHERE (p.first_offset IS NULL)) AS pending,
    o.updated_at
   FROM (herald.consumer_offsets o
     CROSS JOIN herald.log_counter c);


--
-- Name: VIEW consumer_lag; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON VIEW herald.consumer_lag IS 'Consumer group progress against the end of herald.log.';


--
-- Name: dead_letters; Type: VIEW; Schema: herald; Owner: -
--

CREATE VIEW herald.dead_letters AS
 SELECT m.id,
    m.channel,
    m.recipient,
    m.attempts,
    m.max_attempts,
    m.last_error,
    m.last_error_class,
    m.errors,
    m.created_at,
    m.finished_at AS died_at,
    m.metadata,
    m.producer,
    m.last_error_code
   FROM herald.messages m
  WHERE (m.status = 'dead'::text)
  ORDER BY m.finished_at DESC, m.id DESC;


--
-- Name: VIEW dead_letters; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON VIEW herald.dead_letters IS 'Dead messages (permanent failure or attempts exhausted), newest first.';


--
-- Name: delivery_events; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.delivery_events (
    id bigint NOT NULL,
    source text NOT NULL COLLATE pg_catalog."C",
    event_id text NOT NULL COLLATE pg_catalog."C",
    message_id bigint,
    recipient text,
    event text NOT NULL,
    type text,
    code text,
    reason text,
    at timestamp with time zone NOT NULL,
    received_at timestamp with time zone NOT NULL
);


--
-- Name: TABLE delivery_events; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.delivery_events IS 'Delivery events from providers, each stored once (source, event_id); message_id NULL when unmatched.';


--
-- Name: COLUMN delivery_events.recipient; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.delivery_events.recipient IS 'The address the provider reported the event for; NULL: not reported (the message''s recipient). A cc or bcc address: a copy''s event, which sets no outcome.';


--
-- Name: COLUMN delivery_events.reason; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.delivery_events.reason IS 'The provider''s text (first 500 characters); for workers and admins, never shown to producers.';


--
-- Name: delivery_events_id_seq; Type: SEQUENCE; Schema: herald; Owner: -
--

ALTER TABLE herald.delivery_events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME herald.delivery_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: installed_code; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.installed_code (
    singleton boolean DEFAULT true NOT NULL,
    hash text,
    installed_at timestamp with time zone NOT NULL,
    CONSTRAINT installed_code_singleton CHECK (singleton)
);


--
-- Name: TABLE installed_code; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.installed_code IS 'Hash of the installed functions, views and triggers; NULL when installed by hand.';


--
-- Name: lease_token_seq; Type: SEQUENCE; Schema: herald; Owner: -
--

CREATE SEQUENCE herald.lease_token_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: SEQUENCE lease_token_seq; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON SEQUENCE herald.lease_token_seq IS 'Fencing tokens: one per claim_batch call.';


--
-- Name: log; Type: VIEW; Schema: herald; Owner: -
--

CREATE VIEW herald.log AS
 SELECT ((s.first_offset + e.pos) - 1) AS "offset",
    e.message_id,
    s.kind,
    e.channel,
    e.key_hash,
    s.at,
    herald._log_detail(s.kind, e.detail, e.provider_message_id, e.attempts) AS detail
   FROM (herald.log_statements s
     CROSS JOIN LATERAL UNNEST(s.message_ids, s.channels, s.key_hashes, s.details, s.provider_message_ids, s.attempts) WITH ORDINALITY e(message_id, channel, key_hash, detail, provider_message_id, attempts, pos))
  WHERE (s.first_offset IS NOT NULL);


--
-- Name: VIEW log; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON VIEW herald.log IS 'Ordered, gapless log of message lifecycle events, one row per event (expanded from herald.log_statements).';


--
-- Name: log_statements_seq_seq; Type: SEQUENCE; Schema: herald; Owner: -
--

ALTER TABLE herald.log_statements ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME herald.log_statements_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: message_id_keys; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.message_id_keys (
    key bytea DEFAULT (uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())) NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT message_id_keys_key_check CHECK (((octet_length(key) >= 16) AND (octet_length(key) <= 64)))
);


--
-- Name: TABLE message_id_keys; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.message_id_keys IS 'Secret keys of the tags in e-mail Message-IDs and webhook-ids: the newest signs, all verify; readable by runners (herald_worker) and herald_events only.';


--
-- Name: messages_id_seq; Type: SEQUENCE; Schema: herald; Owner: -
--

ALTER TABLE herald.messages ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME herald.messages_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: notify_clock_log; Type: SEQUENCE; Schema: herald; Owner: -
--

CREATE SEQUENCE herald.notify_clock_log
    START WITH 0
    INCREMENT BY 1
    MINVALUE 0
    NO MAXVALUE
    CACHE 1;


--
-- Name: SEQUENCE notify_clock_log; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON SEQUENCE herald.notify_clock_log IS 'Time of the last herald_log NOTIFY (µs), 0 when a listener waits.';


--
-- Name: notify_clock_queue; Type: SEQUENCE; Schema: herald; Owner: -
--

CREATE SEQUENCE herald.notify_clock_queue
    START WITH 0
    INCREMENT BY 1
    MINVALUE 0
    NO MAXVALUE
    CACHE 1;


--
-- Name: SEQUENCE notify_clock_queue; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON SEQUENCE herald.notify_clock_queue IS 'Time of the last herald_queue NOTIFY (µs), 0 when a listener waits.';


--
-- Name: ordering_rechecks; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.ordering_rechecks (
    id bigint NOT NULL,
    producer text NOT NULL COLLATE pg_catalog."C",
    ordering_key text NOT NULL COLLATE pg_catalog."C",
    message_id bigint NOT NULL,
    noted_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: TABLE ordering_rechecks; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.ordering_rechecks IS 'Ordering keys whose next message reap_stale must release (a race with a concurrent change).';


--
-- Name: ordering_rechecks_id_seq; Type: SEQUENCE; Schema: herald; Owner: -
--

ALTER TABLE herald.ordering_rechecks ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME herald.ordering_rechecks_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: producer_backlog; Type: VIEW; Schema: herald; Owner: -
--

CREATE VIEW herald.producer_backlog AS
 SELECT b.producer,
    b.channel,
    b.queued,
    b.held,
    b.processing,
    b.earliest_run_at,
    herald._producer_bound(c.producer_concurrency, p.concurrency) AS concurrency
   FROM ((( SELECT m.producer,
            m.channel,
            count(*) FILTER (WHERE (m.status = 'queued'::text)) AS queued,
            count(*) FILTER (WHERE (m.status = 'held'::text)) AS held,
            count(*) FILTER (WHERE (m.status = 'processing'::text)) AS processing,
            min(m.run_at) FILTER (WHERE (m.status = 'queued'::text)) AS earliest_run_at
           FROM herald.messages m
          WHERE (m.status = ANY (ARRAY['queued'::text, 'held'::text, 'processing'::text]))
          GROUP BY m.producer, m.channel) b
     LEFT JOIN herald.channels c ON ((c.name = b.channel)))
     LEFT JOIN herald.producers p ON ((p.producer = b.producer)));


--
-- Name: VIEW producer_backlog; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON VIEW herald.producer_backlog IS 'Unfinished messages per producer and channel, and the bound on its sends there: who fills the queue (admins; reads every unfinished message).';


--
-- Name: producer_buckets; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.producer_buckets (
    producer text NOT NULL COLLATE pg_catalog."C",
    clear_at timestamp with time zone NOT NULL
)
WITH (fillfactor='70');


--
-- Name: TABLE producer_buckets; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.producer_buckets IS 'Per-producer budgets behind herald.producers.send_limit: when each producer may again enqueue a full limit.';


--
-- Name: public_suffixes; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.public_suffixes (
    suffix text NOT NULL,
    normal boolean NOT NULL,
    wildcard boolean NOT NULL,
    exception boolean NOT NULL,
    CONSTRAINT public_suffixes_rule CHECK ((normal OR wildcard OR exception))
);


--
-- Name: TABLE public_suffixes; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.public_suffixes IS 'The Public Suffix List, one row per name: herald._site finds a host''s registrable domain in it.';


--
-- Name: COLUMN public_suffixes.normal; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.public_suffixes.normal IS 'The name is a public suffix (co.uk).';


--
-- Name: COLUMN public_suffixes.wildcard; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.public_suffixes.wildcard IS 'Every name one label under it is a public suffix (*.ck).';


--
-- Name: COLUMN public_suffixes.exception; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON COLUMN herald.public_suffixes.exception IS 'The name is not a public suffix though a wildcard covers it (!www.ck).';


--
-- Name: queue_depth; Type: VIEW; Schema: herald; Owner: -
--

CREATE VIEW herald.queue_depth AS
 WITH counted AS (
         SELECT m.channel,
                CASE
                    WHEN (m.run_at > now()) THEN 'scheduled'::text
                    ELSE 'queued'::text
                END AS status,
            count(*) AS count
           FROM herald.messages m
          WHERE (m.status = 'queued'::text)
          GROUP BY m.channel,
                CASE
                    WHEN (m.run_at > now()) THEN 'scheduled'::text
                    ELSE 'queued'::text
                END
        UNION ALL
         SELECT m.channel,
            'held'::text AS text,
            count(*) AS count
           FROM herald.messages m
          WHERE (m.status = 'held'::text)
          GROUP BY m.channel
        UNION ALL
         SELECT m.channel,
            'processing'::text AS text,
            count(*) AS count
           FROM herald.messages m
          WHERE (m.status = 'processing'::text)
          GROUP BY m.channel
        )
 SELECT c.name AS channel,
    s.status,
    COALESCE(k.count, (0)::bigint) AS count
   FROM ((herald.channels c
     CROSS JOIN ( VALUES ('queued'::text), ('scheduled'::text), ('held'::text), ('processing'::text)) s(status))
     LEFT JOIN counted k ON (((k.channel = c.name) AND (k.status = s.status))));


--
-- Name: VIEW queue_depth; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON VIEW herald.queue_depth IS 'Messages queued and due, scheduled, held and processing per channel, read through the partial indexes.';


--
-- Name: queue_stats; Type: VIEW; Schema: herald; Owner: -
--

CREATE VIEW herald.queue_stats AS
 SELECT m.channel,
    m.status,
    count(*) AS count,
    count(*) FILTER (WHERE ((m.status = 'queued'::text) AND (m.run_at <= now()))) AS ready,
        CASE
            WHEN (m.status = 'queued'::text) THEN (now() - min(m.run_at) FILTER (WHERE (m.run_at <= now())))
            ELSE (now() - min(m.created_at))
        END AS oldest_age,
    ( SELECT c.paused
           FROM herald.channels c
          WHERE (c.name = m.channel)) AS paused
   FROM herald.messages m
  GROUP BY m.channel, m.status;


--
-- Name: VIEW queue_stats; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON VIEW herald.queue_stats IS 'Messages per channel and status: count, ready now, age of the oldest, channel paused.';


--
-- Name: rate_buckets; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.rate_buckets (
    channel text NOT NULL,
    tokens double precision NOT NULL,
    refilled_at timestamp with time zone NOT NULL
)
WITH (fillfactor='50');


--
-- Name: TABLE rate_buckets; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.rate_buckets IS 'Per-channel token buckets behind herald.channels.rate, shared by every runner (claim_batch).';


--
-- Name: recipient_buckets; Type: TABLE; Schema: herald; Owner: -
--

CREATE TABLE herald.recipient_buckets (
    channel text NOT NULL,
    recipient text NOT NULL,
    clear_at timestamp with time zone NOT NULL
)
WITH (fillfactor='70');


--
-- Name: TABLE recipient_buckets; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TABLE herald.recipient_buckets IS 'Per-recipient budgets behind herald.channels.recipient_limit: when each recipient may again be sent a full limit.';


--
-- Name: throughput; Type: VIEW; Schema: herald; Owner: -
--

CREATE VIEW herald.throughput AS
 SELECT m.channel,
    date_trunc('minute'::text, m.finished_at) AS minute,
    count(*) FILTER (WHERE (m.status = 'sent'::text)) AS sent,
    count(*) FILTER (WHERE (m.status = 'dead'::text)) AS dead,
    count(*) FILTER (WHERE (m.status = 'cancelled'::text)) AS cancelled,
    count(*) FILTER (WHERE (m.status = 'expired'::text)) AS expired
   FROM herald.messages m
  WHERE (m.finished_at >= (now() - '01:00:00'::interval))
  GROUP BY m.channel, (date_trunc('minute'::text, m.finished_at));


--
-- Name: VIEW throughput; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON VIEW herald.throughput IS 'Messages finished per channel and minute over the last hour.';


--
-- Name: herald_schema_version; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.herald_schema_version (
    version integer NOT NULL
);


--
-- Name: channels channels_name_kind_key; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.channels
    ADD CONSTRAINT channels_name_kind_key UNIQUE (name, kind);


--
-- Name: channels channels_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.channels
    ADD CONSTRAINT channels_pkey PRIMARY KEY (name);


--
-- Name: consumer_dead_letters consumer_dead_letters_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.consumer_dead_letters
    ADD CONSTRAINT consumer_dead_letters_pkey PRIMARY KEY (group_name, "offset");


--
-- Name: consumer_groups consumer_groups_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.consumer_groups
    ADD CONSTRAINT consumer_groups_pkey PRIMARY KEY (name);


--
-- Name: consumer_offsets consumer_offsets_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.consumer_offsets
    ADD CONSTRAINT consumer_offsets_pkey PRIMARY KEY (group_name, partition);


--
-- Name: delivery_events delivery_events_once; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.delivery_events
    ADD CONSTRAINT delivery_events_once UNIQUE (source, event_id);


--
-- Name: delivery_events delivery_events_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.delivery_events
    ADD CONSTRAINT delivery_events_pkey PRIMARY KEY (id);


--
-- Name: installed_code installed_code_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.installed_code
    ADD CONSTRAINT installed_code_pkey PRIMARY KEY (singleton);


--
-- Name: log_counter log_counter_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.log_counter
    ADD CONSTRAINT log_counter_pkey PRIMARY KEY (singleton);


--
-- Name: log_statements log_statements_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.log_statements
    ADD CONSTRAINT log_statements_pkey PRIMARY KEY (seq);


--
-- Name: message_id_keys message_id_keys_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.message_id_keys
    ADD CONSTRAINT message_id_keys_pkey PRIMARY KEY (key);


--
-- Name: messages messages_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.messages
    ADD CONSTRAINT messages_pkey PRIMARY KEY (id);


--
-- Name: ordering_rechecks ordering_rechecks_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.ordering_rechecks
    ADD CONSTRAINT ordering_rechecks_pkey PRIMARY KEY (id);


--
-- Name: producer_buckets producer_buckets_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.producer_buckets
    ADD CONSTRAINT producer_buckets_pkey PRIMARY KEY (producer);


--
-- Name: producers producers_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.producers
    ADD CONSTRAINT producers_pkey PRIMARY KEY (producer);


--
-- Name: public_suffixes public_suffixes_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.public_suffixes
    ADD CONSTRAINT public_suffixes_pkey PRIMARY KEY (suffix);


--
-- Name: rate_buckets rate_buckets_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.rate_buckets
    ADD CONSTRAINT rate_buckets_pkey PRIMARY KEY (channel);


--
-- Name: recipient_buckets recipient_buckets_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.recipient_buckets
    ADD CONSTRAINT recipient_buckets_pkey PRIMARY KEY (channel, recipient);


--
-- Name: suppressions suppressions_pkey; Type: CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.suppressions
    ADD CONSTRAINT suppressions_pkey PRIMARY KEY (kind, recipient);


--
-- Name: herald_schema_version herald_schema_version_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.herald_schema_version
    ADD CONSTRAINT herald_schema_version_pkey PRIMARY KEY (version);


--
-- Name: delivery_events_message_idx; Type: INDEX; Schema: herald; Owner: -
--

CREATE INDEX delivery_events_message_idx ON herald.delivery_events USING btree (message_id);


--
-- Name: log_statements_offset_idx; Type: INDEX; Schema: herald; Owner: -
--

CREATE UNIQUE INDEX log_statements_offset_idx ON herald.log_statements USING btree (first_offset) WHERE (first_offset IS NOT NULL);


--
-- Name: log_statements_pending_idx; Type: INDEX; Schema: herald; Owner: -
--

CREATE INDEX log_statements_pending_idx ON herald.log_statements USING btree (seq) WHERE (first_offset IS NULL);


--
-- Name: messages_claim_idx; Type: INDEX; Schema: herald; Owner: -
--

CREATE INDEX messages_claim_idx ON herald.messages USING btree (priority, hashtext(channel), hashtext(producer), run_at, id) WHERE (status = 'queued'::text);


--
-- Name: messages_dead_idx; Type: INDEX; Schema: herald; Owner: -
--

CREATE INDEX messages_dead_idx ON herald.messages USING btree (finished_at, id) WHERE (status = 'dead'::text);


--
-- Name: messages_expiry_idx; Type: INDEX; Schema: herald; Owner: -
--

CREATE INDEX messages_expiry_idx ON herald.messages USING btree (expires_at) WHERE (status = ANY (ARRAY['queued'::text, 'held'::text]));


--
-- Name: messages_idempotency_key_idx; Type: INDEX; Schema: herald; Owner: -
--

CREATE UNIQUE INDEX messages_idempotency_key_idx ON herald.messages USING btree (producer, idempotency_key) WHERE (idempotency_key IS NOT NULL);


--
-- Name: messages_in_flight_idx; Type: INDEX; Schema: herald; Owner: -
--

CREATE INDEX messages_in_flight_idx ON herald.messages USING btree (channel, producer, lease_expires_at) WITH (deduplicate_items=off) WHERE (status = 'processing'::text);


--
-- Name: messages_ordering_key_idx; Type: INDEX; Schema: herald; Owner: -
--

CREATE INDEX messages_ordering_key_idx ON herald.messages USING btree (producer, ordering_key, id) WHERE ((ordering_key IS NOT NULL) AND (finished_at IS NULL));


--
-- Name: messages _900_messages_notify; Type: TRIGGER; Schema: herald; Owner: -
--

CREATE TRIGGER _900_messages_notify AFTER INSERT ON herald.messages FOR EACH STATEMENT EXECUTE FUNCTION herald._messages_notify();


--
-- Name: TRIGGER _900_messages_notify ON messages; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TRIGGER _900_messages_notify ON herald.messages IS 'Wakes runners and log consumers (NOTIFY herald_queue, herald_log) once per INSERT statement, when one may be waiting.';


--
-- Name: channels channels_quiet_zone; Type: TRIGGER; Schema: herald; Owner: -
--

CREATE TRIGGER channels_quiet_zone BEFORE INSERT OR UPDATE OF quiet_zone ON herald.channels FOR EACH ROW EXECUTE FUNCTION herald._channels_quiet_zone_check();


--
-- Name: TRIGGER channels_quiet_zone ON channels; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TRIGGER channels_quiet_zone ON herald.channels IS 'Refuses a quiet_zone that is not an IANA time zone name PostgreSQL has (22V19).';


--
-- Name: producers producers_callbacks; Type: TRIGGER; Schema: herald; Owner: -
--

CREATE TRIGGER producers_callbacks BEFORE INSERT OR UPDATE OF callback_url, callback_channel, callback_events ON herald.producers FOR EACH ROW EXECUTE FUNCTION herald._producers_callback_check();


--
-- Name: TRIGGER producers_callbacks ON producers; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TRIGGER producers_callbacks ON herald.producers IS 'Refuses a callback_url, callback_channel or callback_events a status callback could not be enqueued with.';


--
-- Name: producers producers_callbacks_group; Type: TRIGGER; Schema: herald; Owner: -
--

CREATE TRIGGER producers_callbacks_group AFTER INSERT OR DELETE OR UPDATE OF callback_url ON herald.producers FOR EACH STATEMENT EXECUTE FUNCTION herald._callbacks_group();


--
-- Name: TRIGGER producers_callbacks_group ON producers; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TRIGGER producers_callbacks_group ON herald.producers IS 'Keeps the consumer group of herald.dispatch_callbacks while a producer has a callback_url.';


--
-- Name: suppressions suppressions_normalize; Type: TRIGGER; Schema: herald; Owner: -
--

CREATE TRIGGER suppressions_normalize BEFORE INSERT OR UPDATE ON herald.suppressions FOR EACH ROW EXECUTE FUNCTION herald._suppressions_normalize();


--
-- Name: TRIGGER suppressions_normalize ON suppressions; Type: COMMENT; Schema: herald; Owner: -
--

COMMENT ON TRIGGER suppressions_normalize ON herald.suppressions IS 'Stores recipients as herald._suppression_key makes them (e-mail addresses in lower case).';


--
-- Name: channels channels_fallback_same_kind; Type: FK CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.channels
    ADD CONSTRAINT channels_fallback_same_kind FOREIGN KEY (fallback, kind) REFERENCES herald.channels(name, kind);


--
-- Name: consumer_dead_letters consumer_dead_letters_group_name_fkey; Type: FK CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.consumer_dead_letters
    ADD CONSTRAINT consumer_dead_letters_group_name_fkey FOREIGN KEY (group_name) REFERENCES herald.consumer_groups(name) ON DELETE CASCADE;


--
-- Name: consumer_offsets consumer_offsets_group_name_fkey; Type: FK CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.consumer_offsets
    ADD CONSTRAINT consumer_offsets_group_name_fkey FOREIGN KEY (group_name) REFERENCES herald.consumer_groups(name) ON DELETE CASCADE;


--
-- Name: producers producers_callback_channel_fkey; Type: FK CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.producers
    ADD CONSTRAINT producers_callback_channel_fkey FOREIGN KEY (callback_channel) REFERENCES herald.channels(name) ON UPDATE CASCADE;


--
-- Name: rate_buckets rate_buckets_channel_fkey; Type: FK CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.rate_buckets
    ADD CONSTRAINT rate_buckets_channel_fkey FOREIGN KEY (channel) REFERENCES herald.channels(name) ON UPDATE CASCADE ON DELETE CASCADE;


--
-- Name: recipient_buckets recipient_buckets_channel_fkey; Type: FK CONSTRAINT; Schema: herald; Owner: -
--

ALTER TABLE ONLY herald.recipient_buckets
    ADD CONSTRAINT recipient_buckets_channel_fkey FOREIGN KEY (channel) REFERENCES herald.channels(name) ON UPDATE CASCADE ON DELETE CASCADE;


--
-- Name: SCHEMA herald; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA herald TO herald_producer;
GRANT USAGE ON SCHEMA herald TO herald_intake;
GRANT USAGE ON SCHEMA herald TO herald_worker;
GRANT USAGE ON SCHEMA herald TO herald_consumer;
GRANT USAGE ON SCHEMA herald TO herald_events;
GRANT USAGE ON SCHEMA herald TO herald_admin;


--
-- Name: FUNCTION _address_problem(address text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._address_problem(address text) FROM PUBLIC;


--
-- Name: FUNCTION _append_error(errors jsonb, entry jsonb); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._append_error(errors jsonb, entry jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _backoff(attempt integer, base interval, cap interval); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._backoff(attempt integer, base interval, cap interval) FROM PUBLIC;


--
-- Name: FUNCTION _base64(text text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._base64(text text) FROM PUBLIC;


--
-- Name: FUNCTION _budget_after(clear_at timestamp with time zone, now timestamp with time zone, spent interval); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._budget_after(clear_at timestamp with time zone, now timestamp with time zone, spent interval) FROM PUBLIC;


--
-- Name: FUNCTION _budget_clock(now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._budget_clock(now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _callback_names(OUT "group" text, OUT producer text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._callback_names(OUT "group" text, OUT producer text) FROM PUBLIC;


--
-- Name: TABLE messages; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON TABLE herald.messages TO herald_admin;


--
-- Name: TABLE producers; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON TABLE herald.producers TO herald_admin;


--
-- Name: FUNCTION _callback_spec(p herald.producers, m herald.messages, kind text, "offset" bigint, at timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._callback_spec(p herald.producers, m herald.messages, kind text, "offset" bigint, at timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _callbacks_group(); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._callbacks_group() FROM PUBLIC;


--
-- Name: FUNCTION _caller(); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._caller() FROM PUBLIC;


--
-- Name: FUNCTION _channel_quiet(quiet_from time without time zone, quiet_until time without time zone, quiet_days smallint[], quiet_zone text, quiet_per_recipient boolean, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._channel_quiet(quiet_from time without time zone, quiet_until time without time zone, quiet_days smallint[], quiet_zone text, quiet_per_recipient boolean, now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _channels_quiet_zone_check(); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._channels_quiet_zone_check() FROM PUBLIC;


--
-- Name: FUNCTION _check_arrays(fields text[], lengths integer[], required integer, code text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._check_arrays(fields text[], lengths integer[], required integer, code text) FROM PUBLIC;


--
-- Name: FUNCTION _check_callback_channel(channel text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._check_callback_channel(channel text) FROM PUBLIC;


--
-- Name: FUNCTION _check_clock(now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._check_clock(now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _check_group("group" text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._check_group("group" text) FROM PUBLIC;


--
-- Name: FUNCTION _check_kind(kind text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._check_kind(kind text) FROM PUBLIC;


--
-- Name: FUNCTION _check_not_null(fields text[], present boolean[]); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._check_not_null(fields text[], present boolean[]) FROM PUBLIC;


--
-- Name: FUNCTION _check_pauser(by text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._check_pauser(by text) FROM PUBLIC;


--
-- Name: FUNCTION _check_source(source text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._check_source(source text) FROM PUBLIC;


--
-- Name: FUNCTION _consumer_partition("group" text, partition integer, skip_locked boolean, OUT partitions integer, OUT committed_offset bigint); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._consumer_partition("group" text, partition integer, skip_locked boolean, OUT partitions integer, OUT committed_offset bigint) FROM PUBLIC;


--
-- Name: FUNCTION _copies(payload jsonb); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._copies(payload jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _email_address(recipient text, syntax_checked boolean); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._email_address(recipient text, syntax_checked boolean) FROM PUBLIC;


--
-- Name: FUNCTION _email_addresses(payload jsonb); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._email_addresses(payload jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _enqueue(specs herald.message_spec[], now timestamp with time zone, single boolean, as_producer text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._enqueue(specs herald.message_spec[], now timestamp with time zone, single boolean, as_producer text) FROM PUBLIC;


--
-- Name: FUNCTION _event_detail(kind text, provider_message_id text, error_class text, error text, attempts integer); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._event_detail(kind text, provider_message_id text, error_class text, error text, attempts integer) FROM PUBLIC;
GRANT ALL ON FUNCTION herald._event_detail(kind text, provider_message_id text, error_class text, error text, attempts integer) TO herald_consumer;
GRANT ALL ON FUNCTION herald._event_detail(kind text, provider_message_id text, error_class text, error text, attempts integer) TO herald_admin;


--
-- Name: FUNCTION _gsm7(extension_only boolean); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._gsm7(extension_only boolean) FROM PUBLIC;


--
-- Name: FUNCTION _held(specs herald.message_spec[], producer text, barred bigint[]); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._held(specs herald.message_spec[], producer text, barred bigint[]) FROM PUBLIC;


--
-- Name: FUNCTION _id_before(tab regclass, col name, cut timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._id_before(tab regclass, col name, cut timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _json_integer(item jsonb, key text, prefix text, code text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._json_integer(item jsonb, key text, prefix text, code text) FROM PUBLIC;


--
-- Name: FUNCTION _json_text(item jsonb, key text, prefix text, code text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._json_text(item jsonb, key text, prefix text, code text) FROM PUBLIC;


--
-- Name: FUNCTION _json_timestamptz(item jsonb, key text, prefix text, code text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._json_timestamptz(item jsonb, key text, prefix text, code text) FROM PUBLIC;


--
-- Name: FUNCTION _key_hash(ordering_key text, recipient text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._key_hash(ordering_key text, recipient text) FROM PUBLIC;


--
-- Name: FUNCTION _listening(channel text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._listening(channel text) FROM PUBLIC;


--
-- Name: FUNCTION _log_after(after bigint, partitions integer, partition integer, max integer); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._log_after(after bigint, partitions integer, partition integer, max integer) FROM PUBLIC;


--
-- Name: FUNCTION _log_detail(kind text, detail jsonb, provider_message_id text, attempts integer); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._log_detail(kind text, detail jsonb, provider_message_id text, attempts integer) FROM PUBLIC;
GRANT ALL ON FUNCTION herald._log_detail(kind text, detail jsonb, provider_message_id text, attempts integer) TO herald_consumer;
GRANT ALL ON FUNCTION herald._log_detail(kind text, detail jsonb, provider_message_id text, attempts integer) TO herald_admin;


--
-- Name: FUNCTION _log_kinds(); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._log_kinds() FROM PUBLIC;


--
-- Name: FUNCTION _mailbox(value text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._mailbox(value text) FROM PUBLIC;


--
-- Name: FUNCTION _mailbox_key(kind text, recipient text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._mailbox_key(kind text, recipient text) FROM PUBLIC;


--
-- Name: FUNCTION _mark_sent(ids bigint[], lease_tokens bigint[], provider_message_ids text[], now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._mark_sent(ids bigint[], lease_tokens bigint[], provider_message_ids text[], now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _message_specs(messages jsonb); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._message_specs(messages jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _message_status(m herald.messages); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._message_status(m herald.messages) FROM PUBLIC;


--
-- Name: FUNCTION _messages_notify(); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._messages_notify() FROM PUBLIC;


--
-- Name: FUNCTION _named_producer(name text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._named_producer(name text) FROM PUBLIC;


--
-- Name: FUNCTION _nonempty_string(obj jsonb, key text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._nonempty_string(obj jsonb, key text) FROM PUBLIC;


--
-- Name: FUNCTION _notify(channels text[]); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._notify(channels text[]) FROM PUBLIC;


--
-- Name: FUNCTION _notify_clock_due(clock bigint); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._notify_clock_due(clock bigint) FROM PUBLIC;


--
-- Name: FUNCTION _notify_due(channel text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._notify_due(channel text) FROM PUBLIC;


--
-- Name: FUNCTION _outcome_rank(outcome text, outcome_type text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._outcome_rank(outcome text, outcome_type text) FROM PUBLIC;


--
-- Name: FUNCTION _over_budget(clear_at timestamp with time zone, now timestamp with time zone, budget_window interval, budget_limit integer); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._over_budget(clear_at timestamp with time zone, now timestamp with time zone, budget_window interval, budget_limit integer) FROM PUBLIC;


--
-- Name: FUNCTION _own_message(id bigint, idempotency_key text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._own_message(id bigint, idempotency_key text) FROM PUBLIC;


--
-- Name: FUNCTION _payload_fields(kind text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._payload_fields(kind text) FROM PUBLIC;


--
-- Name: FUNCTION _payload_problem(kind text, payload jsonb); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._payload_problem(kind text, payload jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _person_key(kind text, recipient text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._person_key(kind text, recipient text) FROM PUBLIC;


--
-- Name: FUNCTION _person_messages(kind text, mailbox text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._person_messages(kind text, mailbox text) FROM PUBLIC;


--
-- Name: FUNCTION _producer(); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._producer() FROM PUBLIC;


--
-- Name: FUNCTION _producer_bound(channel_bound integer, own_bound integer); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._producer_bound(channel_bound integer, own_bound integer) FROM PUBLIC;
GRANT ALL ON FUNCTION herald._producer_bound(channel_bound integer, own_bound integer) TO herald_admin;


--
-- Name: FUNCTION _producers_callback_check(); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._producers_callback_check() FROM PUBLIC;


--
-- Name: FUNCTION _punycode(label text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._punycode(label text) FROM PUBLIC;


--
-- Name: FUNCTION _quiet(quiet_from time without time zone, quiet_until time without time zone, quiet_days smallint[], quiet_zone text, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._quiet(quiet_from time without time zone, quiet_until time without time zone, quiet_days smallint[], quiet_zone text, now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _quiet_end(quiet_from time without time zone, quiet_until time without time zone, quiet_days smallint[], quiet_zone text, at timestamp with time zone, recipient_zone text, zone_known boolean); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._quiet_end(quiet_from time without time zone, quiet_until time without time zone, quiet_days smallint[], quiet_zone text, at timestamp with time zone, recipient_zone text, zone_known boolean) FROM PUBLIC;


--
-- Name: TABLE channels; Type: ACL; Schema: herald; Owner: -
--

GRANT SELECT ON TABLE herald.channels TO herald_worker;
GRANT ALL ON TABLE herald.channels TO herald_admin;


--
-- Name: FUNCTION _range_key(channel herald.channels, recipient text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._range_key(channel herald.channels, recipient text) FROM PUBLIC;


--
-- Name: FUNCTION _ready(channels text[], slots integer[], caps integer[], n integer, turn bigint, from_priority integer, bounded text[], bounds integer[], now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._ready(channels text[], slots integer[], caps integer[], n integer, turn bigint, from_priority integer, bounded text[], bounds integer[], now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _recipient_list_kind(list text, n integer); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._recipient_list_kind(list text, n integer) FROM PUBLIC;


--
-- Name: FUNCTION _recipient_pattern(kind text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._recipient_pattern(kind text) FROM PUBLIC;


--
-- Name: FUNCTION _refuse_clock(now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._refuse_clock(now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _refused_address(url text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._refused_address(url text) FROM PUBLIC;


--
-- Name: FUNCTION _refused_networks(); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._refused_networks() FROM PUBLIC;


--
-- Name: FUNCTION _reject(code text, field text, message text, detail text, hint text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._reject(code text, field text, message text, detail text, hint text) FROM PUBLIC;


--
-- Name: FUNCTION _release_after(ids bigint[], producers text[], keys text[]); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._release_after(ids bigint[], producers text[], keys text[]) FROM PUBLIC;


--
-- Name: FUNCTION _repeats(specs herald.message_spec[], policy herald.producers, ids bigint[], now timestamp with time zone, OUT positions bigint[], OUT first_ids bigint[], OUT valid boolean); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._repeats(specs herald.message_spec[], policy herald.producers, ids bigint[], now timestamp with time zone, OUT positions bigint[], OUT first_ids bigint[], OUT valid boolean) FROM PUBLIC;


--
-- Name: FUNCTION _sender_allowed(sender text, senders text[]); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._sender_allowed(sender text, senders text[]) FROM PUBLIC;


--
-- Name: FUNCTION _settle_rechecks(); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._settle_rechecks() FROM PUBLIC;


--
-- Name: FUNCTION _shallow(value jsonb); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._shallow(value jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _site(host text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._site(host text) FROM PUBLIC;


--
-- Name: FUNCTION _sms_segments(body text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._sms_segments(body text) FROM PUBLIC;


--
-- Name: FUNCTION _sms_within(body text, max_segments integer); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._sms_within(body text, max_segments integer) FROM PUBLIC;


--
-- Name: FUNCTION _spend_producer(policy herald.producers, n integer, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._spend_producer(policy herald.producers, n integer, now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _spend_recipients(specs herald.message_spec[], barred bigint[], single boolean, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._spend_recipients(specs herald.message_spec[], barred bigint[], single boolean, now timestamp with time zone) FROM PUBLIC;


--
-- Name: TABLE suppressions; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON TABLE herald.suppressions TO herald_admin;


--
-- Name: FUNCTION _suppression(kind text, recipient text, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._suppression(kind text, recipient text, now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _suppression_key(kind text, recipient text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._suppression_key(kind text, recipient text) FROM PUBLIC;


--
-- Name: FUNCTION _suppression_reason(kind text, event text, type text, code text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._suppression_reason(kind text, event text, type text, code text) FROM PUBLIC;


--
-- Name: FUNCTION _suppressions_normalize(); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._suppressions_normalize() FROM PUBLIC;


--
-- Name: FUNCTION _time_zone(name text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._time_zone(name text) FROM PUBLIC;


--
-- Name: FUNCTION _unsuppressed_copies(payload jsonb, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._unsuppressed_copies(payload jsonb, now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _url_host(url text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._url_host(url text) FROM PUBLIC;


--
-- Name: FUNCTION _valid(kind text, max_payload_bytes integer, max_segments integer, max_recipients integer, recipient text, payload jsonb, run_at timestamp with time zone, priority integer, policy herald.producers, channel_producers text[], channel_prefixes text[], max_attempts integer, metadata jsonb, idempotency_key text, ordering_key text, expires_at timestamp with time zone, recipient_zone text, now timestamp with time zone, checked_kind text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._valid(kind text, max_payload_bytes integer, max_segments integer, max_recipients integer, recipient text, payload jsonb, run_at timestamp with time zone, priority integer, policy herald.producers, channel_producers text[], channel_prefixes text[], max_attempts integer, metadata jsonb, idempotency_key text, ordering_key text, expires_at timestamp with time zone, recipient_zone text, now timestamp with time zone, checked_kind text) FROM PUBLIC;


--
-- Name: FUNCTION _validate(spec herald.message_spec, policy herald.producers, now timestamp with time zone, field_prefix text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald._validate(spec herald.message_spec, policy herald.producers, now timestamp with time zone, field_prefix text) FROM PUBLIC;


--
-- Name: FUNCTION cancel(id bigint, idempotency_key text, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.cancel(id bigint, idempotency_key text, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.cancel(id bigint, idempotency_key text, now timestamp with time zone) TO herald_producer;
GRANT ALL ON FUNCTION herald.cancel(id bigint, idempotency_key text, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION claim_batch(worker text, batch_size integer, lease interval, channels text[], now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.claim_batch(worker text, batch_size integer, lease interval, channels text[], now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.claim_batch(worker text, batch_size integer, lease interval, channels text[], now timestamp with time zone) TO herald_worker;
GRANT ALL ON FUNCTION herald.claim_batch(worker text, batch_size integer, lease interval, channels text[], now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION complete(ids bigint[], lease_tokens bigint[], provider_message_ids text[], now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.complete(ids bigint[], lease_tokens bigint[], provider_message_ids text[], now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.complete(ids bigint[], lease_tokens bigint[], provider_message_ids text[], now timestamp with time zone) TO herald_worker;
GRANT ALL ON FUNCTION herald.complete(ids bigint[], lease_tokens bigint[], provider_message_ids text[], now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION complete(id bigint, lease_token bigint, provider_message_id text, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.complete(id bigint, lease_token bigint, provider_message_id text, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.complete(id bigint, lease_token bigint, provider_message_id text, now timestamp with time zone) TO herald_worker;
GRANT ALL ON FUNCTION herald.complete(id bigint, lease_token bigint, provider_message_id text, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION count_producers(now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.count_producers(now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.count_producers(now timestamp with time zone) TO herald_worker;
GRANT ALL ON FUNCTION herald.count_producers(now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION create_consumer_group("group" text, partitions integer, start text, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.create_consumer_group("group" text, partitions integer, start text, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.create_consumer_group("group" text, partitions integer, start text, now timestamp with time zone) TO herald_consumer;
GRANT ALL ON FUNCTION herald.create_consumer_group("group" text, partitions integer, start text, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION dispatch_callbacks(max integer, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.dispatch_callbacks(max integer, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.dispatch_callbacks(max integer, now timestamp with time zone) TO herald_worker;
GRANT ALL ON FUNCTION herald.dispatch_callbacks(max integer, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION end_suspension(producer text, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.end_suspension(producer text, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.end_suspension(producer text, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION enqueue(channel text, recipient text, payload jsonb, run_at timestamp with time zone, priority integer, idempotency_key text, ordering_key text, max_attempts integer, metadata jsonb, expires_at timestamp with time zone, recipient_zone text, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.enqueue(channel text, recipient text, payload jsonb, run_at timestamp with time zone, priority integer, idempotency_key text, ordering_key text, max_attempts integer, metadata jsonb, expires_at timestamp with time zone, recipient_zone text, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.enqueue(channel text, recipient text, payload jsonb, run_at timestamp with time zone, priority integer, idempotency_key text, ordering_key text, max_attempts integer, metadata jsonb, expires_at timestamp with time zone, recipient_zone text, now timestamp with time zone) TO herald_producer;
GRANT ALL ON FUNCTION herald.enqueue(channel text, recipient text, payload jsonb, run_at timestamp with time zone, priority integer, idempotency_key text, ordering_key text, max_attempts integer, metadata jsonb, expires_at timestamp with time zone, recipient_zone text, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION enqueue_batch(messages jsonb, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.enqueue_batch(messages jsonb, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.enqueue_batch(messages jsonb, now timestamp with time zone) TO herald_producer;
GRANT ALL ON FUNCTION herald.enqueue_batch(messages jsonb, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION enqueue_many(channels text[], recipients text[], payloads jsonb[], run_ats timestamp with time zone[], priorities integer[], idempotency_keys text[], ordering_keys text[], max_attempts integer[], metadata jsonb[], expires_ats timestamp with time zone[], recipient_zones text[], now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.enqueue_many(channels text[], recipients text[], payloads jsonb[], run_ats timestamp with time zone[], priorities integer[], idempotency_keys text[], ordering_keys text[], max_attempts integer[], metadata jsonb[], expires_ats timestamp with time zone[], recipient_zones text[], now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.enqueue_many(channels text[], recipients text[], payloads jsonb[], run_ats timestamp with time zone[], priorities integer[], idempotency_keys text[], ordering_keys text[], max_attempts integer[], metadata jsonb[], expires_ats timestamp with time zone[], recipient_zones text[], now timestamp with time zone) TO herald_producer;
GRANT ALL ON FUNCTION herald.enqueue_many(channels text[], recipients text[], payloads jsonb[], run_ats timestamp with time zone[], priorities integer[], idempotency_keys text[], ordering_keys text[], max_attempts integer[], metadata jsonb[], expires_ats timestamp with time zone[], recipient_zones text[], now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION extend_lease(ids bigint[], lease_tokens bigint[], lease interval, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.extend_lease(ids bigint[], lease_tokens bigint[], lease interval, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.extend_lease(ids bigint[], lease_tokens bigint[], lease interval, now timestamp with time zone) TO herald_worker;
GRANT ALL ON FUNCTION herald.extend_lease(ids bigint[], lease_tokens bigint[], lease interval, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION fail(ids bigint[], lease_tokens bigint[], errors text[], error_classes text[], retry_at timestamp with time zone[], error_codes text[], now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.fail(ids bigint[], lease_tokens bigint[], errors text[], error_classes text[], retry_at timestamp with time zone[], error_codes text[], now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.fail(ids bigint[], lease_tokens bigint[], errors text[], error_classes text[], retry_at timestamp with time zone[], error_codes text[], now timestamp with time zone) TO herald_worker;
GRANT ALL ON FUNCTION herald.fail(ids bigint[], lease_tokens bigint[], errors text[], error_classes text[], retry_at timestamp with time zone[], error_codes text[], now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION fail(id bigint, lease_token bigint, error text, error_class text, retry_at timestamp with time zone, error_code text, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.fail(id bigint, lease_token bigint, error text, error_class text, retry_at timestamp with time zone, error_code text, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.fail(id bigint, lease_token bigint, error text, error_class text, retry_at timestamp with time zone, error_code text, now timestamp with time zone) TO herald_worker;
GRANT ALL ON FUNCTION herald.fail(id bigint, lease_token bigint, error text, error_class text, retry_at timestamp with time zone, error_code text, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION forget(kind text, recipient text, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.forget(kind text, recipient text, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.forget(kind text, recipient text, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION history(id bigint, idempotency_key text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.history(id bigint, idempotency_key text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.history(id bigint, idempotency_key text) TO herald_producer;
GRANT ALL ON FUNCTION herald.history(id bigint, idempotency_key text) TO herald_admin;


--
-- Name: FUNCTION is_suppressed(channel text, recipient text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.is_suppressed(channel text, recipient text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.is_suppressed(channel text, recipient text) TO herald_producer;
GRANT ALL ON FUNCTION herald.is_suppressed(channel text, recipient text) TO herald_admin;


--
-- Name: FUNCTION log_ack("group" text, partition integer, upto bigint, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.log_ack("group" text, partition integer, upto bigint, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.log_ack("group" text, partition integer, upto bigint, now timestamp with time zone) TO herald_consumer;
GRANT ALL ON FUNCTION herald.log_ack("group" text, partition integer, upto bigint, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION log_dead_letter("group" text, partition integer, "offset" bigint, error text, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.log_dead_letter("group" text, partition integer, "offset" bigint, error text, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.log_dead_letter("group" text, partition integer, "offset" bigint, error text, now timestamp with time zone) TO herald_consumer;
GRANT ALL ON FUNCTION herald.log_dead_letter("group" text, partition integer, "offset" bigint, error text, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION log_read("group" text, partition integer, max integer); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.log_read("group" text, partition integer, max integer) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.log_read("group" text, partition integer, max integer) TO herald_consumer;
GRANT ALL ON FUNCTION herald.log_read("group" text, partition integer, max integer) TO herald_admin;


--
-- Name: FUNCTION log_sequence(max integer); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.log_sequence(max integer) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.log_sequence(max integer) TO herald_worker;
GRANT ALL ON FUNCTION herald.log_sequence(max integer) TO herald_consumer;
GRANT ALL ON FUNCTION herald.log_sequence(max integer) TO herald_admin;


--
-- Name: FUNCTION log_truncate(before_offset bigint); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.log_truncate(before_offset bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.log_truncate(before_offset bigint) TO herald_admin;


--
-- Name: FUNCTION pause_channel(channel text, reason text, by text, until timestamp with time zone, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.pause_channel(channel text, reason text, by text, until timestamp with time zone, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.pause_channel(channel text, reason text, by text, until timestamp with time zone, now timestamp with time zone) TO herald_worker;
GRANT ALL ON FUNCTION herald.pause_channel(channel text, reason text, by text, until timestamp with time zone, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION producer_wait(); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.producer_wait() FROM PUBLIC;
GRANT ALL ON FUNCTION herald.producer_wait() TO herald_producer;
GRANT ALL ON FUNCTION herald.producer_wait() TO herald_admin;


--
-- Name: FUNCTION purge(older_than interval, now timestamp with time zone, batch_size integer); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.purge(older_than interval, now timestamp with time zone, batch_size integer) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.purge(older_than interval, now timestamp with time zone, batch_size integer) TO herald_admin;


--
-- Name: FUNCTION quiet_channels(); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.quiet_channels() FROM PUBLIC;
GRANT ALL ON FUNCTION herald.quiet_channels() TO herald_worker;
GRANT ALL ON FUNCTION herald.quiet_channels() TO herald_admin;


--
-- Name: FUNCTION reap_stale(now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.reap_stale(now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.reap_stale(now timestamp with time zone) TO herald_worker;
GRANT ALL ON FUNCTION herald.reap_stale(now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION recipient_wait(channel text, recipient text, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.recipient_wait(channel text, recipient text, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.recipient_wait(channel text, recipient text, now timestamp with time zone) TO herald_producer;
GRANT ALL ON FUNCTION herald.recipient_wait(channel text, recipient text, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION record_copy_refusal(message_id bigint, recipient text, code text, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.record_copy_refusal(message_id bigint, recipient text, code text, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.record_copy_refusal(message_id bigint, recipient text, code text, now timestamp with time zone) TO herald_worker;
GRANT ALL ON FUNCTION herald.record_copy_refusal(message_id bigint, recipient text, code text, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION record_delivery_events(source text, events jsonb, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.record_delivery_events(source text, events jsonb, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.record_delivery_events(source text, events jsonb, now timestamp with time zone) TO herald_events;
GRANT ALL ON FUNCTION herald.record_delivery_events(source text, events jsonb, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION record_opt_out(kind text, recipient text, opted_out boolean, source text, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.record_opt_out(kind text, recipient text, opted_out boolean, source text, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.record_opt_out(kind text, recipient text, opted_out boolean, source text, now timestamp with time zone) TO herald_events;
GRANT ALL ON FUNCTION herald.record_opt_out(kind text, recipient text, opted_out boolean, source text, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION redispatch_callbacks(now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.redispatch_callbacks(now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.redispatch_callbacks(now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION redrive(ids bigint[], now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.redrive(ids bigint[], now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.redrive(ids bigint[], now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION refresh_statistics(); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.refresh_statistics() FROM PUBLIC;
GRANT ALL ON FUNCTION herald.refresh_statistics() TO herald_worker;
GRANT ALL ON FUNCTION herald.refresh_statistics() TO herald_admin;


--
-- Name: FUNCTION resume_channel(channel text, by text, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.resume_channel(channel text, by text, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.resume_channel(channel text, by text, now timestamp with time zone) TO herald_worker;
GRANT ALL ON FUNCTION herald.resume_channel(channel text, by text, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION status(id bigint, idempotency_key text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.status(id bigint, idempotency_key text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.status(id bigint, idempotency_key text) TO herald_producer;
GRANT ALL ON FUNCTION herald.status(id bigint, idempotency_key text) TO herald_admin;


--
-- Name: FUNCTION subject_access(kind text, recipient text); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.subject_access(kind text, recipient text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.subject_access(kind text, recipient text) TO herald_admin;


--
-- Name: FUNCTION suppress(kind text, recipients text[], reason text, source text, expires_at timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.suppress(kind text, recipients text[], reason text, source text, expires_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.suppress(kind text, recipients text[], reason text, source text, expires_at timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION unsubscribe(message_id bigint, now timestamp with time zone); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.unsubscribe(message_id bigint, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.unsubscribe(message_id bigint, now timestamp with time zone) TO herald_events;
GRANT ALL ON FUNCTION herald.unsubscribe(message_id bigint, now timestamp with time zone) TO herald_admin;


--
-- Name: FUNCTION unsuppress(kind text, recipients text[]); Type: ACL; Schema: herald; Owner: -
--

REVOKE ALL ON FUNCTION herald.unsuppress(kind text, recipients text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.unsuppress(kind text, recipients text[]) TO herald_admin;


--
-- Name: TABLE consumer_dead_letters; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON TABLE herald.consumer_dead_letters TO herald_admin;
GRANT SELECT ON TABLE herald.consumer_dead_letters TO herald_consumer;


--
-- Name: TABLE consumer_groups; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON TABLE herald.consumer_groups TO herald_admin;
GRANT SELECT ON TABLE herald.consumer_groups TO herald_consumer;


--
-- Name: TABLE consumer_offsets; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON TABLE herald.consumer_offsets TO herald_admin;
GRANT SELECT ON TABLE herald.consumer_offsets TO herald_consumer;


--
-- Name: TABLE log_counter; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON TABLE herald.log_counter TO herald_admin;


--
-- Name: TABLE log_statements; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON TABLE herald.log_statements TO herald_admin;


--
-- Name: TABLE consumer_lag; Type: ACL; Schema: herald; Owner: -
--

GRANT SELECT ON TABLE herald.consumer_lag TO herald_consumer;
GRANT SELECT ON TABLE herald.consumer_lag TO herald_worker;
GRANT SELECT ON TABLE herald.consumer_lag TO herald_admin;


--
-- Name: TABLE dead_letters; Type: ACL; Schema: herald; Owner: -
--

GRANT SELECT ON TABLE herald.dead_letters TO herald_admin;


--
-- Name: TABLE delivery_events; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON TABLE herald.delivery_events TO herald_admin;


--
-- Name: SEQUENCE delivery_events_id_seq; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON SEQUENCE herald.delivery_events_id_seq TO herald_admin;


--
-- Name: TABLE installed_code; Type: ACL; Schema: herald; Owner: -
--

GRANT SELECT ON TABLE herald.installed_code TO herald_worker;
GRANT ALL ON TABLE herald.installed_code TO herald_admin;


--
-- Name: SEQUENCE lease_token_seq; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON SEQUENCE herald.lease_token_seq TO herald_admin;


--
-- Name: TABLE log; Type: ACL; Schema: herald; Owner: -
--

GRANT SELECT ON TABLE herald.log TO herald_consumer;
GRANT SELECT ON TABLE herald.log TO herald_admin;


--
-- Name: SEQUENCE log_statements_seq_seq; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON SEQUENCE herald.log_statements_seq_seq TO herald_admin;


--
-- Name: TABLE message_id_keys; Type: ACL; Schema: herald; Owner: -
--

GRANT SELECT ON TABLE herald.message_id_keys TO herald_worker;
GRANT SELECT ON TABLE herald.message_id_keys TO herald_events;
GRANT ALL ON TABLE herald.message_id_keys TO herald_admin;


--
-- Name: SEQUENCE messages_id_seq; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON SEQUENCE herald.messages_id_seq TO herald_admin;


--
-- Name: SEQUENCE notify_clock_log; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON SEQUENCE herald.notify_clock_log TO herald_admin;


--
-- Name: SEQUENCE notify_clock_queue; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON SEQUENCE herald.notify_clock_queue TO herald_admin;


--
-- Name: TABLE ordering_rechecks; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON TABLE herald.ordering_rechecks TO herald_admin;


--
-- Name: SEQUENCE ordering_rechecks_id_seq; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON SEQUENCE herald.ordering_rechecks_id_seq TO herald_admin;


--
-- Name: TABLE producer_backlog; Type: ACL; Schema: herald; Owner: -
--

GRANT SELECT ON TABLE herald.producer_backlog TO herald_admin;


--
-- Name: TABLE producer_buckets; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON TABLE herald.producer_buckets TO herald_admin;


--
-- Name: TABLE public_suffixes; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON TABLE herald.public_suffixes TO herald_admin;


--
-- Name: TABLE queue_depth; Type: ACL; Schema: herald; Owner: -
--

GRANT SELECT ON TABLE herald.queue_depth TO herald_worker;
GRANT SELECT ON TABLE herald.queue_depth TO herald_admin;


--
-- Name: TABLE queue_stats; Type: ACL; Schema: herald; Owner: -
--

GRANT SELECT ON TABLE herald.queue_stats TO herald_worker;
GRANT SELECT ON TABLE herald.queue_stats TO herald_admin;


--
-- Name: TABLE rate_buckets; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON TABLE herald.rate_buckets TO herald_admin;


--
-- Name: TABLE recipient_buckets; Type: ACL; Schema: herald; Owner: -
--

GRANT ALL ON TABLE herald.recipient_buckets TO herald_admin;


--
-- Name: TABLE throughput; Type: ACL; Schema: herald; Owner: -
--

GRANT SELECT ON TABLE herald.throughput TO herald_worker;
GRANT SELECT ON TABLE herald.throughput TO herald_admin;


--
-- PostgreSQL database dump complete
--


