-- install.sql — herald's functions, views and triggers, installed as a whole.
--
-- A tern code package: every line below pulls in one file of sql/functions or
-- sql/triggers, in dependency order (SQL functions and views are checked when
-- created, so what they call comes first). Each file is CREATE OR REPLACE, so the
-- package can be applied again at any time, in one transaction:
--   herald migrate                              (when the files' hash changed)
--   tern code install -c tern.conf sql          (by hand, without our binary)
--   psql -f sql/functions/claim_batch.sql       (one file, for a DBA's experiment)
-- Schema herald belongs to herald: at the end, every function of the schema that
-- this install did not (re)create is dropped, so a removed function, or one whose
-- arguments changed, leaves nothing behind; one whose result changes takes a new name
-- (CREATE OR REPLACE cannot change a result). Requires the tables of sql/schema
-- (tern migrate first).
{{ template "functions/_reject.sql" . }}
{{ template "functions/_nonempty_string.sql" . }}
{{ template "functions/_recipient_pattern.sql" . }}
{{ template "functions/_email_address.sql" . }}
{{ template "functions/_punycode.sql" . }}
{{ template "functions/_address_problem.sql" . }}
{{ template "functions/_mailbox.sql" . }}
{{ template "functions/_sender_allowed.sql" . }}
{{ template "functions/_recipient_list_kind.sql" . }}
{{ template "functions/_payload_fields.sql" . }}
{{ template "functions/_base64.sql" . }}
{{ template "functions/_shallow.sql" . }}
{{ template "functions/_payload_problem.sql" . }}
{{ template "functions/_gsm7.sql" . }}
{{ template "functions/_sms_segments.sql" . }}
{{ template "functions/_sms_within.sql" . }}
{{ template "functions/_refused_networks.sql" . }}
{{ template "functions/_refused_address.sql" . }}
{{ template "functions/_backoff.sql" . }}
{{ template "functions/_append_error.sql" . }}
{{ template "functions/_key_hash.sql" . }}
{{ template "functions/_suppression_key.sql" . }}
{{ template "functions/_mailbox_key.sql" . }}
{{ template "functions/_url_host.sql" . }}
{{ template "functions/_site.sql" . }}
{{ template "functions/_range_key.sql" . }}
{{ template "functions/_time_zone.sql" . }}
{{ template "functions/_quiet.sql" . }}
{{ template "functions/_channel_quiet.sql" . }}
{{ template "functions/_quiet_end.sql" . }}
{{ template "functions/_budget_clock.sql" . }}
{{ template "functions/_budget_after.sql" . }}
{{ template "functions/_over_budget.sql" . }}
{{ template "functions/_suppression.sql" . }}
{{ template "functions/_copies.sql" . }}
{{ template "functions/_unsuppressed_copies.sql" . }}
{{ template "functions/_suppression_reason.sql" . }}
{{ template "functions/_outcome_rank.sql" . }}
{{ template "functions/_event_detail.sql" . }}
{{ template "functions/_log_detail.sql" . }}
{{ template "functions/_log_kinds.sql" . }}
{{ template "functions/_callback_names.sql" . }}
{{ template "functions/_message_status.sql" . }}
{{ template "functions/_callback_spec.sql" . }}
{{ template "functions/_check_callback_channel.sql" . }}
{{ template "functions/_check_arrays.sql" . }}
{{ template "functions/_check_not_null.sql" . }}
{{ template "functions/_check_kind.sql" . }}
{{ template "functions/_check_source.sql" . }}
{{ template "functions/_caller.sql" . }}
{{ template "functions/_named_producer.sql" . }}
{{ template "functions/_check_pauser.sql" . }}
{{ template "functions/_producer.sql" . }}
{{ template "functions/_own_message.sql" . }}
{{ template "functions/_refuse_clock.sql" . }}
{{ template "functions/_check_clock.sql" . }}
{{ template "functions/_json_text.sql" . }}
{{ template "functions/_json_integer.sql" . }}
{{ template "functions/_json_timestamptz.sql" . }}
{{ template "functions/_message_specs.sql" . }}
{{ template "functions/_email_addresses.sql" . }}
{{ template "functions/_valid.sql" . }}
{{ template "functions/_validate.sql" . }}
{{ template "functions/_repeats.sql" . }}
{{ template "functions/_held.sql" . }}
{{ template "functions/_spend_recipients.sql" . }}
{{ template "functions/_spend_producer.sql" . }}
{{ template "functions/_enqueue.sql" . }}
{{ template "functions/_notify_clock_due.sql" . }}
{{ template "functions/_notify_due.sql" . }}
{{ template "functions/_notify.sql" . }}
{{ template "functions/_listening.sql" . }}
{{ template "functions/_release_after.sql" . }}
{{ template "functions/_mark_sent.sql" . }}
{{ template "functions/_settle_rechecks.sql" . }}
{{ template "functions/_check_group.sql" . }}
{{ template "functions/_consumer_partition.sql" . }}
{{ template "functions/log.sql" . }}
{{ template "functions/_log_after.sql" . }}
{{ template "functions/enqueue.sql" . }}
{{ template "functions/enqueue_batch.sql" . }}
{{ template "functions/enqueue_many.sql" . }}
{{ template "functions/_producer_bound.sql" . }}
{{ template "functions/_ready.sql" . }}
{{ template "functions/claim_batch.sql" . }}
{{ template "functions/complete.sql" . }}
{{ template "functions/fail.sql" . }}
{{ template "functions/extend_lease.sql" . }}
{{ template "functions/reap_stale.sql" . }}
{{ template "functions/cancel.sql" . }}
{{ template "functions/pause_channel.sql" . }}
{{ template "functions/resume_channel.sql" . }}
{{ template "functions/redrive.sql" . }}
{{ template "functions/_id_before.sql" . }}
{{ template "functions/purge.sql" . }}
{{ template "functions/_person_key.sql" . }}
{{ template "functions/_person_messages.sql" . }}
{{ template "functions/forget.sql" . }}
{{ template "functions/subject_access.sql" . }}
{{ template "functions/status.sql" . }}
{{ template "functions/history.sql" . }}
{{ template "functions/suppress.sql" . }}
{{ template "functions/unsuppress.sql" . }}
{{ template "functions/is_suppressed.sql" . }}
{{ template "functions/recipient_wait.sql" . }}
{{ template "functions/record_delivery_events.sql" . }}
{{ template "functions/unsubscribe.sql" . }}
{{ template "functions/record_copy_refusal.sql" . }}
{{ template "functions/record_opt_out.sql" . }}
{{ template "functions/queue_stats.sql" . }}
{{ template "functions/queue_depth.sql" . }}
{{ template "functions/quiet_channels.sql" . }}
{{ template "functions/producer_backlog.sql" . }}
{{ template "functions/dead_letters.sql" . }}
{{ template "functions/throughput.sql" . }}
{{ template "functions/log_sequence.sql" . }}
{{ template "functions/refresh_statistics.sql" . }}
{{ template "functions/count_producers.sql" . }}
{{ template "functions/end_suspension.sql" . }}
{{ template "functions/producer_wait.sql" . }}
{{ template "functions/create_consumer_group.sql" . }}
{{ template "functions/dispatch_callbacks.sql" . }}
{{ template "functions/redispatch_callbacks.sql" . }}
{{ template "functions/log_read.sql" . }}
{{ template "functions/log_ack.sql" . }}
{{ template "functions/log_dead_letter.sql" . }}
{{ template "functions/log_truncate.sql" . }}
{{ template "functions/consumer_lag.sql" . }}
{{ template "triggers/messages_notify.sql" . }}
{{ template "triggers/suppressions_normalize.sql" . }}
{{ template "triggers/producers_callbacks.sql" . }}
{{ template "triggers/channels_quiet_zone.sql" . }}

DO $$
DECLARE
  f regprocedure;
BEGIN
  FOR f IN
    SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
    WHERE p.pronamespace = 'herald'::regnamespace
      AND p.xmin::text <> (pg_catalog.pg_current_xact_id()::xid)::text
  LOOP
    EXECUTE format('DROP FUNCTION %s', f);
  END LOOP;
END
$$;
INSERT INTO herald.installed_code (hash, installed_at) VALUES (NULL, now())
ON CONFLICT (singleton) DO UPDATE SET hash = NULL, installed_at = now();
