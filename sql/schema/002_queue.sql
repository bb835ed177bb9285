-- 002_queue.sql — the queue: channels, producers, messages, their indexes, the message spec type.
--
-- herald.messages status transitions (each made by one function of sql/functions):
--   queued     --claim_batch-->  processing
--   processing --complete----->  sent                      (terminal)
--   processing --fail--------->  queued (retry at run_at) | dead (permanent, or attempts exhausted)
--   processing --reap_stale--->  queued                   | dead (attempts exhausted)
--   queued     --cancel------->  cancelled                 (terminal)
--   queued     --reap_stale--->  expired  (expires_at passed: never sent late; terminal)
--   queued     --enqueue/claim->  suppressed (the recipient is on herald.suppressions; terminal)
--   processing --fail/reap---->  expired  (a retry would come after expires_at; terminal)
--   dead       --redrive------>  queued (attempts reset)
--   held       --release------>  queued   (the earlier message of its ordering key ended)
--   held       --cancel/reap-->  cancelled | expired (terminal)
-- Terminal rows carry finished_at and are removed by herald.purge.
-- Every hot query has a partial index below that matches its WHERE and ORDER BY;
-- docs/tuning.md says which query each serves and what to change.

-- Per-channel policy. `kind` decides how herald.enqueue validates recipients and
-- payloads: email (addr-spec; payload subject and text/html/body), sms (E.164; payload
-- text or body), webhook (http/https URL; any object), custom (any non-empty
-- recipient, any object). Analysed after every change (thresholds 0): every enqueue
-- joins it, and unanalysed it looks like 500 rows to the planner.
CREATE TABLE herald.channels (
  name               text PRIMARY KEY,
  kind               text NOT NULL,
  max_attempts       integer NOT NULL DEFAULT 5,
  backoff_base       interval NOT NULL DEFAULT '10 seconds',
  backoff_max        interval NOT NULL DEFAULT '1 hour',
  lease              interval NOT NULL DEFAULT '30 seconds',
  max_payload_bytes  integer NOT NULL DEFAULT 65536,
  ttl                interval NOT NULL DEFAULT '5 days',
  rate               double precision,
  burst              integer,
  paused             boolean NOT NULL DEFAULT false,
  paused_reason      text,
  paused_at          timestamptz,
  paused_by          text,
  paused_until       timestamptz,
  resumed_at         timestamptz,
  pause_relapses     integer NOT NULL DEFAULT 0,
  quota_wait         interval NOT NULL DEFAULT '1 hour',
  producers          text[],
  recipient_prefixes text[],
  recipient_limit    integer,
  recipient_window   interval NOT NULL DEFAULT '1 hour',
  range_limit        integer,
  range_window       interval NOT NULL DEFAULT '1 hour',
  range_digits       smallint NOT NULL DEFAULT 7,
  budget_wait        interval NOT NULL DEFAULT '2 seconds',
  quiet_from         time,
  quiet_until        time,
  quiet_days         smallint[],
  quiet_zone         text NOT NULL DEFAULT 'UTC',
  quiet_per_recipient boolean NOT NULL DEFAULT false,
  fallback           text,
  max_segments       integer DEFAULT 10,
  max_recipients     integer NOT NULL DEFAULT 50,
  producer_concurrency integer,
  CONSTRAINT channels_name_kind_key UNIQUE (name, kind),
  -- A fallback sends the same kind of message, and is another channel: one whose
  -- sender takes this channel's payloads (herald.claim_batch reroutes to it).
  CONSTRAINT channels_fallback_same_kind FOREIGN KEY (fallback, kind) REFERENCES herald.channels (name, kind),
  CONSTRAINT channels_fallback_other CHECK (fallback <> name),
  -- A webhook channel's signing keys are what its receivers trust: never another's.
  CONSTRAINT channels_fallback_not_webhook CHECK (fallback IS NULL OR kind <> 'webhook'),
  CONSTRAINT channels_name_format CHECK (name ~ '^[a-z][a-z0-9_]{0,31}$'),
  CONSTRAINT channels_kind_known CHECK (kind IN ('email', 'sms', 'webhook', 'custom')),
  CONSTRAINT channels_max_attempts_range CHECK (max_attempts BETWEEN 1 AND 100),
  CONSTRAINT channels_backoff_positive CHECK (backoff_base > '0' AND backoff_max >= backoff_base),
  CONSTRAINT channels_lease_range CHECK (lease BETWEEN '1 second' AND '1 day'),
  CONSTRAINT channels_max_payload_range CHECK (max_payload_bytes BETWEEN 64 AND 1048576),
  CONSTRAINT channels_ttl_range CHECK (ttl BETWEEN '1 second' AND '1 year'),
  CONSTRAINT channels_rate_positive CHECK (rate > 0 AND rate <= 1000000),
  CONSTRAINT channels_burst_positive CHECK (burst BETWEEN 1 AND 1000000),
  CONSTRAINT channels_paused_by_known CHECK (paused_by IN ('operator', 'runner')),
  CONSTRAINT channels_paused_until_runner CHECK (paused_until IS NULL OR paused AND paused_by = 'runner'),
  CONSTRAINT channels_quota_wait_range CHECK (quota_wait BETWEEN '1 second' AND '1 day'),
  CONSTRAINT channels_recipient_limit_range CHECK (recipient_limit BETWEEN 1 AND 1000000),
  CONSTRAINT channels_recipient_window_range CHECK (recipient_window BETWEEN '1 second' AND '7 days'),
  CONSTRAINT channels_range_limit_kind CHECK (range_limit IS NULL OR range_limit BETWEEN 1 AND 1000000 AND kind IN ('sms', 'webhook')),
  CONSTRAINT channels_range_window_range CHECK (range_window BETWEEN '1 second' AND '7 days'),
  CONSTRAINT channels_range_digits_range CHECK (range_digits BETWEEN 2 AND 14),
  CONSTRAINT channels_budget_wait_range CHECK (budget_wait BETWEEN '1 millisecond' AND '1 minute'),
  CONSTRAINT channels_max_segments_range CHECK (max_segments BETWEEN 1 AND 50),
  CONSTRAINT channels_max_recipients_range CHECK (max_recipients BETWEEN 1 AND 101),
  CONSTRAINT channels_producer_concurrency_range CHECK (producer_concurrency BETWEEN 1 AND 100000),
  CONSTRAINT channels_quiet_hours_whole CHECK ((quiet_from IS NULL) = (quiet_until IS NULL) AND quiet_from <> quiet_until),
  -- An unknown zone fails here with 22023 'time zone "…" not recognized'.
  CONSTRAINT channels_quiet_days_listed CHECK (cardinality(quiet_days) BETWEEN 1 AND 6
                                               AND quiet_days <@ '{1,2,3,4,5,6,7}'::smallint[]),
  CONSTRAINT channels_quiet_per_recipient_hours CHECK (NOT quiet_per_recipient OR quiet_from IS NOT NULL OR quiet_days IS NOT NULL),
  CONSTRAINT channels_producers_listed CHECK (cardinality(producers) BETWEEN 1 AND 1000
                                              AND array_position(producers, NULL) IS NULL),
  -- sms: E.164 prefixes (+1, +4420); webhook: URL prefixes up to a path's '/'
  -- (https://hooks.example.com/), so a host's name cannot be extended.
  CONSTRAINT channels_recipient_prefixes_form CHECK (recipient_prefixes IS NULL
    OR cardinality(recipient_prefixes) BETWEEN 1 AND 1000
    AND array_position(recipient_prefixes, NULL) IS NULL
    AND CASE kind
          WHEN 'sms' THEN array_to_string(recipient_prefixes, ' ') ~ '^\+[1-9][0-9]{0,14}( \+[1-9][0-9]{0,14})*$'
          WHEN 'webhook' THEN array_to_string(recipient_prefixes, ' ')
                              ~ '^https?://[a-z0-9.-]+(:[0-9]{1,5})?/[^ ]*( https?://[a-z0-9.-]+(:[0-9]{1,5})?/[^ ]*)*$'
          ELSE false
        END)
) WITH (autovacuum_analyze_threshold = 0, autovacuum_analyze_scale_factor = 0);
COMMENT ON TABLE herald.channels IS 'Per-channel delivery policy: validation kind, attempts, backoff, lease, payload limit, pause switch.';
COMMENT ON COLUMN herald.channels.paused IS 'A paused channel still accepts messages; claim_batch hands none of them out.';
COMMENT ON COLUMN herald.channels.ttl IS 'Time-to-live of a message once due: not sent by run_at + ttl, it ends expired (a producer''s expires_at may only shorten it).';
COMMENT ON COLUMN herald.channels.rate IS 'Messages per second all runners together may claim (claim_batch enforces it, herald.rate_buckets); NULL: no limit.';
COMMENT ON COLUMN herald.channels.burst IS 'How many messages the rate lets out at once after a quiet spell; NULL: one second''s worth (at least 1).';
COMMENT ON COLUMN herald.channels.paused_reason IS 'Why the channel is paused, for operators (the console shows it); set with paused.';
COMMENT ON COLUMN herald.channels.paused_at IS 'When the channel was paused; set with paused.';
COMMENT ON COLUMN herald.channels.producers IS 'The producers that may enqueue on the channel (role names, intake:<name>); NULL: every producer. What a webhook receiver of the channel trusts.';
COMMENT ON COLUMN herald.channels.recipient_prefixes IS 'Where the channel may send: an sms recipient must start with one of these E.164 prefixes, a webhook URL with one of these URL prefixes (each up to a ''/'' after the host); NULL: anywhere. Checked at enqueue.';
COMMENT ON COLUMN herald.channels.paused_by IS 'operator (herald.pause_channel; only an operator resumes) or runner (a configuration or quota failure; a runner''s probe may resume).';
COMMENT ON COLUMN herald.channels.paused_until IS 'A runner''s pause for a spent quota or a relapse: no runner resumes the channel before then; NULL: as soon as a probe passes.';
COMMENT ON COLUMN herald.channels.resumed_at IS 'When a runner''s probe last resumed the channel; a runner''s pause within backoff_max of it is a relapse.';
COMMENT ON COLUMN herald.channels.pause_relapses IS 'Runner pauses in a row that came within backoff_max of a probe''s resume (a fault the probe does not see): each waits twice as long (backoff_base * 2^n, at most backoff_max).';
COMMENT ON COLUMN herald.channels.quota_wait IS 'How long the channel pauses when its provider says the account''s sending quota is spent (herald.fail class quota without retry_at).';
COMMENT ON COLUMN herald.channels.recipient_limit IS 'Most messages one recipient may be sent on the channel per recipient_window, from all producers together (herald.recipient_buckets): at once, then one per recipient_window / recipient_limit; past it enqueue refuses (53400 recipient). NULL: no limit.';
COMMENT ON COLUMN herald.channels.recipient_window IS 'The span recipient_limit counts over: a recipient''s budget refills recipient_limit messages per recipient_window.';
COMMENT ON COLUMN herald.channels.range_limit IS 'sms: most messages all numbers of one range (the same first range_digits digits) may be sent per range_window, against SMS pumping through many numbers of one range; webhook: all URLs of one site (the host''s registrable domain by the Public Suffix List, herald._site; an IP address whole), against webhooks aimed at a third party; from all producers together; past it enqueue refuses (53400 recipient). NULL: no limit.';
COMMENT ON COLUMN herald.channels.range_window IS 'The span range_limit counts over.';
COMMENT ON COLUMN herald.channels.budget_wait IS 'Longest an enqueue waits for a recipient''s or range''s budget (recipient_limit, range_limit) held by another transaction that has not committed; past it enqueue refuses (55P03 recipient) instead of waiting for that transaction to end.';
COMMENT ON COLUMN herald.channels.quiet_from IS 'Quiet hours: from this local time (in quiet_zone) to quiet_until (and all of quiet_days), claim_batch hands out none of the channel''s messages (they wait, and may expire); NULL: none.';
COMMENT ON COLUMN herald.channels.quiet_days IS 'Days of the week that are quiet all day, ISO numbers in the quiet zone''s local time (7: Sunday; 6 and 7: the weekend), as quiet_from..quiet_until are quiet every day; NULL: none.';
COMMENT ON COLUMN herald.channels.quiet_until IS 'The end of the quiet hours (before quiet_from: they span midnight).';
COMMENT ON COLUMN herald.channels.quiet_zone IS 'The IANA time zone of the quiet hours (Europe/Berlin, America/New_York); with quiet_per_recipient, that of messages naming none.';
COMMENT ON COLUMN herald.channels.quiet_per_recipient IS 'The quiet hours are each recipient''s local time (the message''s recipient_zone, else quiet_zone): a message is stored due at their end, and claim_batch moves one found in them to their end instead of handing it out. Needs quiet_from or quiet_days.';
COMMENT ON COLUMN herald.channels.max_recipients IS 'email: the most addresses one message may go to, its recipient, cc and bcc together (Amazon SES, Postmark and Resend take 50; the SMTP standard has servers take at least 100); past it enqueue refuses (22V03 payload.cc or payload.bcc). Other kinds ignore it.';
COMMENT ON COLUMN herald.channels.max_segments IS 'sms: the most segments (each one billed) a text may take, counted as carriers do (GSM-7 153 characters a segment, else UCS-2 67); past it enqueue refuses (22V03 payload.text). Texts with media_urls go as MMS and are not counted. NULL: up to 1600 characters; other kinds ignore it.';
COMMENT ON COLUMN herald.channels.fallback IS 'A channel of the same kind (another provider or account) that sends this channel''s due messages while a runner has paused it (provider down, configuration, spent quota; not an operator''s pause): claim_batch moves them to the fallback as it claims them (a rerouted log event). NULL: they wait.';
COMMENT ON COLUMN herald.channels.producer_concurrency IS 'Most messages of one producer being sent (processing) on the channel at once, by all runners together: claim_batch hands out no more of its messages until some are reported, so one producer''s slow receivers cannot take every send slot. NULL: no bound.';
COMMENT ON COLUMN herald.channels.range_digits IS 'How many digits after the + make a number range for range_limit (7: +8801712, +1415555).';
INSERT INTO herald.channels (name, kind) VALUES ('email', 'email'), ('sms', 'sms');
ANALYZE herald.channels;

-- Per-producer policy, written by herald_admin (producer: the role name, or
-- 'intake:<name>' for an intake token); what a producer without a row gets is what
-- every producer may do. Priorities run -100..100, lower first: a producer may use
-- min_priority..100 (no row: 0..100), so running ahead of the default is granted,
-- never taken; a min_priority above 0 is also its default (a demotion needs no change
-- in its code). senders: the e-mail From addresses it may set in a payload, each an
-- address or a domain (any address there); no row or NULL: none, the runner's
-- configured From is used. max_pending: the most unfinished messages the producer may
-- have (NULL: no limit), checked against `pending` as herald.count_producers last
-- counted it. Every enqueue reads its producer's row by primary key; analysed after
-- every change, like herald.channels.
CREATE TABLE herald.producers (
  producer     text COLLATE "C" PRIMARY KEY,
  min_priority smallint NOT NULL DEFAULT 0,
  senders      text[],
  max_pending  integer,
  pending      bigint,
  counted_at   timestamptz,
  max_bounce_rate    real,
  max_complaint_rate real,
  rate_window        interval NOT NULL DEFAULT '1 hour',
  rate_min_sent      integer NOT NULL DEFAULT 100,
  sent_recent        integer,
  bounced_recent     integer,
  complained_recent  integer,
  rated_at           timestamptz,
  suspended_until    timestamptz,
  suspended_reason   text,
  callback_url       text,
  callback_channel   text REFERENCES herald.channels (name) ON UPDATE CASCADE,
  callback_events    text[],
  send_limit         integer,
  send_window        interval NOT NULL DEFAULT '1 day',
  concurrency        integer,
  CONSTRAINT producers_min_priority_range CHECK (min_priority BETWEEN -100 AND 100),
  CONSTRAINT producers_rates_range CHECK (max_bounce_rate > 0 AND max_bounce_rate <= 1
                                          AND max_complaint_rate > 0 AND max_complaint_rate <= 1),
  CONSTRAINT producers_rate_window_range CHECK (rate_window BETWEEN '1 minute' AND '7 days'),
  CONSTRAINT producers_rate_min_sent_range CHECK (rate_min_sent BETWEEN 1 AND 1000000000),
  CONSTRAINT producers_senders_listed CHECK (cardinality(senders) BETWEEN 1 AND 100
                                             AND array_position(senders, NULL) IS NULL),
  CONSTRAINT producers_max_pending_range CHECK (max_pending BETWEEN 1 AND 1000000000),
  CONSTRAINT producers_send_limit_range CHECK (send_limit BETWEEN 1 AND 1000000000),
  CONSTRAINT producers_send_window_range CHECK (send_window BETWEEN '1 second' AND '31 days'),
  CONSTRAINT producers_concurrency_range CHECK (concurrency BETWEEN 1 AND 100000),
  CONSTRAINT producers_callback_whole CHECK ((callback_url IS NULL) = (callback_channel IS NULL)
                                             AND (callback_events IS NULL OR callback_url IS NOT NULL))
) WITH (autovacuum_analyze_threshold = 0, autovacuum_analyze_scale_factor = 0);
COMMENT ON TABLE herald.producers IS 'Per-producer policy set by admins: the most urgent priority a producer may use (0 without a row), the From addresses it may set (none without a row).';
COMMENT ON COLUMN herald.producers.producer IS 'The producer as herald.messages.producer stores it: a role name, or intake:<name>.';
COMMENT ON COLUMN herald.producers.min_priority IS 'Most urgent priority the producer may use (lower runs first); above 0 it is also its default priority.';
COMMENT ON COLUMN herald.producers.concurrency IS 'The producer''s own producer_concurrency on every channel that has one, in place of the channel''s: a larger share for a busy tenant, a smaller one for a suspect one. NULL: the channel''s.';
COMMENT ON COLUMN herald.producers.max_pending IS 'Most unfinished (queued, held, processing) messages the producer may have; over it, its enqueues are refused (53400) until herald.count_producers finds fewer. NULL: no limit.';
COMMENT ON COLUMN herald.producers.pending IS 'The producer''s unfinished messages when herald.count_producers last counted them (only with max_pending).';
COMMENT ON COLUMN herald.producers.counted_at IS 'When herald.count_producers last counted pending.';
COMMENT ON COLUMN herald.producers.max_bounce_rate IS 'Most of its messages sent or dead in the last rate_window that may bounce for good (0..1, e.g. 0.05); over it (with rate_min_sent sent) the producer is suspended. NULL: no bound.';
COMMENT ON COLUMN herald.producers.max_complaint_rate IS 'Most of its messages sent in the last rate_window that may draw a complaint (0..1, e.g. 0.003); over it the producer is suspended. NULL: no bound.';
COMMENT ON COLUMN herald.producers.rate_window IS 'The span the bounce and complaint rates are counted over, and how long a suspension lasts.';
COMMENT ON COLUMN herald.producers.rate_min_sent IS 'Fewest messages in the window before the rates count (a bounce of 1 in 2 says little).';
COMMENT ON COLUMN herald.producers.sent_recent IS 'Messages sent or dead in the last rate_window when herald.count_producers last counted (only with a rate bound).';
COMMENT ON COLUMN herald.producers.bounced_recent IS 'Of sent_recent, those that bounced for good (a hard bounce, or a refusal that rules the address out).';
COMMENT ON COLUMN herald.producers.complained_recent IS 'Of sent_recent, those whose recipient complained.';
COMMENT ON COLUMN herald.producers.rated_at IS 'When herald.count_producers last counted the rates (at most each 60th of rate_window).';
COMMENT ON COLUMN herald.producers.suspended_until IS 'Set by herald.count_producers when a rate went over its bound: until then enqueue refuses the producer (53400) and its queued messages wait. An admin may clear it.';
COMMENT ON COLUMN herald.producers.suspended_reason IS 'Why the producer was suspended: the counts and the bound.';
COMMENT ON COLUMN herald.producers.send_limit IS 'Most messages the producer may enqueue per send_window, on every channel together, from every runner and intake (herald.producer_buckets): the bound on what a stolen credential or a runaway loop can spend; past it enqueue refuses (53400 producer). NULL: no limit.';
COMMENT ON COLUMN herald.producers.send_window IS 'The span send_limit counts over.';
COMMENT ON COLUMN herald.producers.callback_url IS 'Where herald.dispatch_callbacks posts what happens to the producer''s messages (a webhook on callback_channel); NULL: no callbacks. Checked by trigger producers_callbacks.';
COMMENT ON COLUMN herald.producers.callback_channel IS 'The webhook channel the producer''s callbacks go out on (its secrets sign them); set with callback_url.';
COMMENT ON COLUMN herald.producers.callback_events IS 'The log events called back (sent, dead, delivered, ...); NULL: every event but accepted, rerouted and deferred.';
COMMENT ON COLUMN herald.producers.senders IS 'E-mail From addresses the producer may set in a payload: ana@example.com (that address) or example.com (any address there); NULL: none.';

-- One value per claim_batch call: a message's lease_token changes at every claim, so
-- complete/fail/extend_lease from an earlier owner match no row (the fencing token).
CREATE SEQUENCE herald.lease_token_seq AS bigint;
COMMENT ON SEQUENCE herald.lease_token_seq IS 'Fencing tokens: one per claim_batch call.';

-- Every status change touches a column a partial index filters on, so no update is
-- HOT: fillfactor 80 keeps the new version on the same page. Rows churn fast and the
-- claim index must stay small: vacuum after 1 % of rows changed, unthrottled.
CREATE TABLE herald.messages (
  id                  bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  producer            text COLLATE "C" NOT NULL,
  channel             text NOT NULL,
  recipient           text NOT NULL,
  recipient_zone      text,
  payload             jsonb NOT NULL,
  metadata            jsonb,
  priority            smallint NOT NULL DEFAULT 0,
  run_at              timestamptz NOT NULL,
  ordering_key        text COLLATE "C",
  idempotency_key     text COLLATE "C",
  status              text NOT NULL DEFAULT 'queued',
  attempts            integer NOT NULL DEFAULT 0,
  max_attempts        integer NOT NULL,
  lease_token         bigint,
  leased_by           text,
  lease_expires_at    timestamptz,
  created_at          timestamptz NOT NULL,
  expires_at          timestamptz NOT NULL,
  finished_at         timestamptz,
  provider_message_id text,
  outcome             text,
  outcome_type        text,
  outcome_code        text,
  outcome_at          timestamptz,
  last_error          text,
  last_error_class    text,
  last_error_code     text,
  errors              jsonb NOT NULL DEFAULT '[]',
  CONSTRAINT messages_status_known CHECK (status IN ('queued', 'held', 'processing', 'sent', 'dead', 'cancelled', 'expired', 'suppressed')),
  CONSTRAINT messages_outcome_known CHECK (outcome IN ('delivered', 'deferred', 'bounced', 'complained', 'unsubscribed', 'undelivered')),
  CONSTRAINT messages_error_class_known CHECK (last_error_class IN ('transient', 'rate_limited', 'quota', 'configuration', 'permanent')),
  CONSTRAINT messages_lease_when_processing CHECK ((status = 'processing') = (lease_token IS NOT NULL AND lease_expires_at IS NOT NULL)),
  CONSTRAINT messages_finished_when_terminal CHECK ((status IN ('sent', 'dead', 'cancelled', 'expired', 'suppressed')) = (finished_at IS NOT NULL)),
  CONSTRAINT messages_attempts_range CHECK (attempts >= 0 AND max_attempts BETWEEN 1 AND 100)
) WITH (
  fillfactor = 80,
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_insert_scale_factor = 0.01,
  autovacuum_analyze_scale_factor = 0.02,
  autovacuum_vacuum_cost_delay = 0
);
COMMENT ON TABLE herald.messages IS 'One row per notification: what to send, its pipeline state, and its delivery outcome.';
COMMENT ON COLUMN herald.messages.recipient_zone IS 'The recipient''s IANA time zone, given by the producer: a channel with quiet_per_recipient keeps its quiet hours in it. NULL: the channel''s quiet_zone.';
COMMENT ON COLUMN herald.messages.priority IS 'Lower runs first: -100..100, within the producer''s herald.producers.min_priority..100 (0..100 without a row).';
COMMENT ON COLUMN herald.messages.expires_at IS 'Deadline: not sent by then, the message ends expired (least of the producer''s expires_at and due time + channel ttl).';
COMMENT ON COLUMN herald.messages.outcome IS 'What the provider reported after sent (herald.record_delivery_events): delivered, deferred, bounced, complained, unsubscribed, undelivered.';
COMMENT ON COLUMN herald.messages.outcome_type IS 'For bounced: hard (the address does not exist) or soft (mailbox full, blocked for now).';
COMMENT ON COLUMN herald.messages.outcome_code IS 'The provider''s code for the outcome (SMTP status, Twilio ErrorCode); producers see it.';
COMMENT ON COLUMN herald.messages.status IS 'queued, held (behind an earlier message of its ordering key), processing, or finished: sent, dead, cancelled, expired, suppressed.';
COMMENT ON COLUMN herald.messages.ordering_key IS 'Messages of one producer with the same key are sent one at a time, in id order.';
COMMENT ON COLUMN herald.messages.lease_token IS 'Fencing token of the current claim; NULL unless processing.';
COMMENT ON COLUMN herald.messages.producer IS 'Who enqueued it (herald._producer): the role, or intake:<token name>; scopes idempotency keys and herald.status.';
COMMENT ON COLUMN herald.messages.last_error IS 'Text of the last failure (at most 2,000 characters); never shown to producers.';
COMMENT ON COLUMN herald.messages.last_error_code IS 'Short code of the last failure (SMTP reply, HTTP status, provider error code); producers see it.';
COMMENT ON COLUMN herald.messages.errors IS 'Error history, oldest first, at most 20 entries: {at, attempt, class, code, error, worker}.';

-- claim_batch (herald._ready): one priority, channel and producer's ready messages in
-- (run_at, id) order, the producers of a channel found by probes of it.
-- hashtext(channel) and hashtext(producer) are fixed-width stand-ins for the names, so
-- run_at and id keep fixed offsets in the entry; a query tests hashtext(channel) and
-- channel both (two producers sharing a hash share a turn).
-- Held messages (waiting for an earlier one of their ordering key) are not in it, so a
-- key's backlog is not read by every claim.
CREATE INDEX messages_claim_idx ON herald.messages (priority, hashtext(channel), hashtext(producer), run_at, id)
  WHERE status = 'queued';
-- Messages being sent: herald._ready on a channel with producer_concurrency (the
-- channel's entries, per producer), queue_depth, reap_stale (lease_expires_at < now:
-- read whole, as it holds only what is in flight). Entries live as long as a send:
-- no deduplication, which cost every claim more (docs/decisions.md).
CREATE INDEX messages_in_flight_idx ON herald.messages (channel, producer, lease_expires_at)
  WITH (deduplicate_items = off) WHERE status = 'processing';
-- enqueue: a key is unique per producer; lookup of the first id of a repeat. Keys and
-- producers are opaque identifiers: byte order (COLLATE "C") compares them cheaply.
CREATE UNIQUE INDEX messages_idempotency_key_idx ON herald.messages (producer, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
-- reap_stale: queued and held messages past their deadline.
CREATE INDEX messages_expiry_idx ON herald.messages (expires_at) WHERE status IN ('queued', 'held');
-- enqueue, claim_batch and herald._release_after: the pending messages (not finished:
-- queued, held or processing, by messages_finished_when_terminal) of one producer's
-- ordering key in id order ("is an earlier one still pending?", "which is first?").
CREATE INDEX messages_ordering_key_idx ON herald.messages (producer, ordering_key, id)
  WHERE ordering_key IS NOT NULL AND finished_at IS NULL;
-- dead_letters, newest first. Sent messages enter no index on the delivery path;
-- purge and throughput scan the table (docs/tuning.md: when to add an index for them).
CREATE INDEX messages_dead_idx ON herald.messages (finished_at, id) WHERE status = 'dead';

-- Ordering keys to settle again (herald._release_after notes them): when message_id
-- finished, its key's next message could not be told (a concurrent change held a row),
-- or an enqueue in progress held message_id FOR KEY SHARE. herald.reap_stale settles a
-- key (herald._settle_rechecks) once message_id is no longer locked by anyone.
CREATE TABLE herald.ordering_rechecks (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  producer     text COLLATE "C" NOT NULL,
  ordering_key text COLLATE "C" NOT NULL,
  message_id   bigint NOT NULL,
  noted_at     timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE herald.ordering_rechecks IS 'Ordering keys whose next message reap_stale must release (a race with a concurrent change).';

-- One message as the enqueue functions hand it to their one writer (herald._enqueue).
-- NULL fields take the defaults: run_at now, priority 0, the channel's max_attempts.
CREATE TYPE herald.message_spec AS (
  channel         text,
  recipient       text,
  payload         jsonb,
  run_at          timestamptz,
  priority        integer,
  idempotency_key text,
  ordering_key    text,
  max_attempts    integer,
  metadata        jsonb,
  expires_at      timestamptz,
  recipient_zone  text
);
COMMENT ON TYPE herald.message_spec IS 'A message to enqueue: the fields of herald.enqueue; NULL takes the default.';

-- What a producer may see of one of its messages (herald._message_status builds it):
-- herald.status returns it, and a status callback carries it.
CREATE TYPE herald.message_status AS (
  message_id          bigint,
  channel             text,
  status              text,
  attempts            integer,
  max_attempts        integer,
  run_at              timestamptz,
  created_at          timestamptz,
  finished_at         timestamptz,
  expires_at          timestamptz,
  last_error_class    text,
  last_error_code     text,
  provider_message_id text,
  outcome             text,
  outcome_type        text,
  outcome_code        text,
  outcome_at          timestamptz
);
COMMENT ON TYPE herald.message_status IS 'A message as its producer sees it: state, attempts, times, failure class and code, receipt, outcome; no payload, recipient or error text.';

-- The last time (microseconds since the epoch) a transaction notified herald_queue;
-- 0 when a listener has started waiting since (herald._notify_due). A sequence:
-- setval and last_value take no row lock and are not rolled back.
CREATE SEQUENCE herald.notify_clock_queue AS bigint MINVALUE 0 START 0;
COMMENT ON SEQUENCE herald.notify_clock_queue IS 'Time of the last herald_queue NOTIFY (µs), 0 when a listener waits.';

-- Which code (sql/install.sql) is installed: herald migrate re-installs it when the
-- hash of its build's files differs; an install by hand (tern code install) sets NULL.
CREATE TABLE herald.installed_code (
  singleton    boolean PRIMARY KEY DEFAULT true,
  hash         text,
  installed_at timestamptz NOT NULL,
  CONSTRAINT installed_code_singleton CHECK (singleton)
);
COMMENT ON TABLE herald.installed_code IS 'Hash of the installed functions, views and triggers; NULL when installed by hand.';

-- The keys that tag message ids where receivers see them: e-mail Message-IDs
-- (<herald-ID.TAG@domain>) and webhook-ids (msg_ID_TAG), TAG an HMAC of the id. The
-- newest signs, every row verifies (herald mail-report). One random key is made at
-- install, so no two installations share ids and nobody outside can predict one.
-- Rotate (also in a sending copy, after a point-in-time restore): INSERT INTO
-- herald.message_id_keys DEFAULT VALUES, restart the runners, delete the old row a
-- week later, once its mail no longer bounces.
CREATE TABLE herald.message_id_keys (
  key        bytea PRIMARY KEY DEFAULT uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())
             CHECK (octet_length(key) BETWEEN 16 AND 64),
  created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE herald.message_id_keys IS 'Secret keys of the tags in e-mail Message-IDs and webhook-ids: the newest signs, all verify; readable by runners (herald_worker) and herald_events only.';
INSERT INTO herald.message_id_keys DEFAULT VALUES;

-- The token bucket of each channel with a rate: claim_batch locks the row, refills it
-- for the time since refilled_at (up to the burst), claims at most the whole tokens
-- and takes them out. One row per rate-limited channel, made by the first claim;
-- updated in place (HOT: no index on its columns but the key).
CREATE TABLE herald.rate_buckets (
  channel     text PRIMARY KEY REFERENCES herald.channels (name) ON DELETE CASCADE ON UPDATE CASCADE,
  tokens      double precision NOT NULL,
  refilled_at timestamptz NOT NULL
) WITH (fillfactor = 50);
COMMENT ON TABLE herald.rate_buckets IS 'Per-channel token buckets behind herald.channels.rate, shared by every runner (claim_batch).';

-- How much each recipient of a channel with a recipient_limit has been sent lately, as
-- the time its budget is whole again (a token bucket kept as one timestamp, GCRA):
-- each stored message moves clear_at on by recipient_window / recipient_limit from
-- greatest(clear_at, now), and enqueue refuses a message that would move it past now
-- + recipient_window (herald._spend_recipients), under the row's lock. recipient is
-- herald._mailbox_key's (an e-mail address in lower case without its +tag). A row
-- absent or with clear_at past is a whole budget: herald.purge deletes those.
CREATE TABLE herald.recipient_buckets (
  channel   text NOT NULL REFERENCES herald.channels (name) ON DELETE CASCADE ON UPDATE CASCADE,
  recipient text NOT NULL,
  clear_at  timestamptz NOT NULL,
  PRIMARY KEY (channel, recipient)
) WITH (fillfactor = 70);
COMMENT ON TABLE herald.recipient_buckets IS 'Per-recipient budgets behind herald.channels.recipient_limit: when each recipient may again be sent a full limit.';

-- The budget of each producer with a send_limit (herald.producers): clear_at, when it
-- may again enqueue a full limit, as recipient_buckets keeps a recipient's. A row of
-- its own, not the policy row, so count_producers and an admin's edits do not wait
-- for enqueues (which lock it until they commit). herald.purge deletes whole budgets.
CREATE TABLE herald.producer_buckets (
  producer text COLLATE "C" PRIMARY KEY,
  clear_at timestamptz NOT NULL
) WITH (fillfactor = 70);
COMMENT ON TABLE herald.producer_buckets IS 'Per-producer budgets behind herald.producers.send_limit: when each producer may again enqueue a full limit.';

-- Recipients not to send to: hard bounces, spam complaints and unsubscribes (added by
-- herald.record_delivery_events), and lists an operator imports (herald.suppress, or
-- COPY herald.suppressions (kind, recipient, reason, source) FROM …). A message to an
-- active entry ends 'suppressed' at enqueue or at claim, never sent. recipient is
-- stored as herald._suppression_key makes it (e-mail addresses in lower case), by the
-- trigger suppressions_normalize.
CREATE TABLE herald.suppressions (
  kind        text NOT NULL,
  recipient   text NOT NULL,
  reason      text NOT NULL,
  source      text NOT NULL DEFAULT 'operator',
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz,
  PRIMARY KEY (kind, recipient),
  CONSTRAINT suppressions_kind_known CHECK (kind IN ('email', 'sms', 'webhook', 'custom')),
  CONSTRAINT suppressions_reason_known CHECK (reason IN ('bounced', 'complained', 'unsubscribed', 'manual')),
  CONSTRAINT suppressions_recipient_length CHECK (octet_length(recipient) BETWEEN 1 AND 2048)
);
COMMENT ON TABLE herald.suppressions IS 'Recipients herald does not send to (per channel kind): bounces, complaints, unsubscribes, imported lists.';
COMMENT ON COLUMN herald.suppressions.source IS 'Who added it: sendgrid, twilio, generic (provider events), send (a provider refused a send for good: herald.fail) or operator.';
COMMENT ON COLUMN herald.suppressions.expires_at IS 'When the entry stops applying; NULL: never.';

-- Providers' delivery events as received (herald.record_delivery_events): one row per
-- event, a replay (same source and event_id) is not stored again, so it changes nothing
-- twice. message_id is NULL for an event herald could not match. source and event_id
-- are opaque identifiers: byte order (COLLATE "C") compares them cheaply.
CREATE TABLE herald.delivery_events (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  source      text COLLATE "C" NOT NULL,
  event_id    text COLLATE "C" NOT NULL,
  message_id  bigint,
  recipient   text,
  event       text NOT NULL,
  type        text,
  code        text,
  reason      text,
  at          timestamptz NOT NULL,
  received_at timestamptz NOT NULL,
  CONSTRAINT delivery_events_once UNIQUE (source, event_id)
);
-- herald.history: a message's reports.
CREATE INDEX delivery_events_message_idx ON herald.delivery_events (message_id);
COMMENT ON TABLE herald.delivery_events IS 'Delivery events from providers, each stored once (source, event_id); message_id NULL when unmatched.';
COMMENT ON COLUMN herald.delivery_events.recipient IS 'The address the provider reported the event for; NULL: not reported (the message''s recipient). A cc or bcc address: a copy''s event, which sets no outcome.';
COMMENT ON COLUMN herald.delivery_events.reason IS 'The provider''s text (first 500 characters); for workers and admins, never shown to producers.';

GRANT SELECT ON herald.channels TO herald_worker; -- runners read pauses to probe and report them
GRANT SELECT ON herald.installed_code TO herald_worker; -- herald run compares it with its own build's
GRANT SELECT ON herald.message_id_keys TO herald_worker, herald_events; -- e-mail senders sign, herald mail-report verifies
GRANT ALL ON ALL TABLES IN SCHEMA herald TO herald_admin;
GRANT ALL ON ALL SEQUENCES IN SCHEMA herald TO herald_admin;
