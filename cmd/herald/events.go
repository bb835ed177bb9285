package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald/herald/runner/events"
	"github.com/herald/herald/runner/sender/webhook"
)

// eventsConfig reads the delivery-event endpoints' settings (runner/events); each
// endpoint is on only when its secret is set:
//
//	HERALD_SENDGRID_EVENT_KEY        SendGrid's verification key → /v1/events/sendgrid;
//	                                 also HERALD_<CHANNEL>_SENDGRID_EVENT_KEY, one per
//	                                 account of a channel's own (any verifies)
//	HERALD_TWILIO_STATUS_CALLBACK    the public URL of /v1/events/twilio, verified with
//	                                 HERALD_TWILIO_AUTH_TOKEN or any channel's own
//	                                 HERALD_<CHANNEL>_TWILIO_AUTH_TOKEN (one required)
//	HERALD_TWILIO_INBOUND_URL        the public URL of /v1/events/twilio-inbound (STOP
//	                                 and START), verified as the status callbacks
//	HERALD_EVENTS_SECRETS            whsec_ secrets → /v1/events/generic
//	HERALD_SES_TOPIC_ARNS            the Amazon SNS topics of SES's notifications
//	                                 (space-separated ARNs) → /v1/events/ses
//	HERALD_UNSUBSCRIBE_SECRETS       whsec_ secrets of the one-click unsubscribe links
//	                                 (the first makes them) → /v1/unsubscribe/{token}
//	HERALD_EVENTS_TOLERANCE          age of a signed timestamp (5m)
//	HERALD_EVENTS_MAX_BODY_BYTES     body limit (5 MiB)
//	HERALD_EVENTS_MAX_IN_FLIGHT_BYTES  bodies held at once by all endpoints (64 MiB;
//	                                 at least the body limit)
func eventsConfig(ev *environ) (events.Config, error) {
	cfg := events.Config{Tolerance: ev.duration("HERALD_EVENTS_TOLERANCE", 5*time.Minute),
		MaxBodyBytes: int64(ev.int("HERALD_EVENTS_MAX_BODY_BYTES", 5<<20)), MaxInFlightBytes: int64(ev.int("HERALD_EVENTS_MAX_IN_FLIGHT_BYTES", 64<<20))}
	if cfg.MaxBodyBytes < 1 || cfg.MaxInFlightBytes < cfg.MaxBodyBytes {
		return cfg, fmt.Errorf("HERALD_EVENTS_MAX_IN_FLIGHT_BYTES (%d) must be at least HERALD_EVENTS_MAX_BODY_BYTES (%d), which must be positive",
			cfg.MaxInFlightBytes, cfg.MaxBodyBytes)
	}
	for _, name := range accountSettings("SENDGRID_EVENT_KEY") {
		key, err := events.ParseSendGridKey(ev.str(name, ""))
		if err != nil {
			return cfg, fmt.Errorf("%s: %w", name, err)
		}
		cfg.SendGridKeys = append(cfg.SendGridKeys, key)
	}
	cfg.TwilioURL, cfg.TwilioInboundURL = ev.str("HERALD_TWILIO_STATUS_CALLBACK", ""), ev.str("HERALD_TWILIO_INBOUND_URL", "")
	if cfg.TwilioURL != "" || cfg.TwilioInboundURL != "" {
		for _, name := range accountSettings("TWILIO_AUTH_TOKEN") {
			if token := ev.secret(name); token != "" {
				cfg.TwilioAuthTokens = append(cfg.TwilioAuthTokens, token)
			}
		}
		if len(cfg.TwilioAuthTokens) == 0 {
			return cfg, fmt.Errorf("HERALD_TWILIO_STATUS_CALLBACK and HERALD_TWILIO_INBOUND_URL need HERALD_TWILIO_AUTH_TOKEN " +
				"(or a channel's HERALD_<CHANNEL>_TWILIO_AUTH_TOKEN): Twilio signs what it posts with the account's auth token")
		}
	}
	var err error
	if cfg.GenericSecrets, err = secrets(ev, "HERALD_EVENTS_SECRETS"); err != nil {
		return cfg, err
	}
	cfg.SESTopics = strings.Fields(ev.str("HERALD_SES_TOPIC_ARNS", ""))
	for i, arn := range cfg.SESTopics {
		if !topicARN.MatchString(arn) {
			return cfg, fmt.Errorf("HERALD_SES_TOPIC_ARNS: entry %d, %q, is not an Amazon SNS topic ARN (arn:aws:sns:REGION:ACCOUNT:NAME)", i+1, arn)
		}
	}
	keys, err := signingKeys(ev, "HERALD_UNSUBSCRIBE_SECRETS")
	if err != nil {
		return cfg, err
	}
	cfg.UnsubscribeKeys = keys
	return cfg, ev.err()
}

// accountSettings lists the variables that hold one provider account's setting
// (suffix such as TWILIO_AUTH_TOKEN): HERALD_<suffix> and every channel's own
// HERALD_<CHANNEL>_<suffix> (providerSetting), set directly or as _FILE, in name
// order, so the events endpoints verify what every account a channel sends with
// posts back.
func accountSettings(suffix string) []string {
	var names []string
	for _, kv := range os.Environ() {
		name, v, _ := strings.Cut(kv, "=")
		name = strings.TrimSuffix(name, "_FILE")
		if v != "" && strings.HasPrefix(name, "HERALD_") && strings.HasSuffix(name, "_"+suffix) && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// topicARN is an Amazon SNS topic's ARN.
var topicARN = regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$`)

// signingKeys reads the variable name as whsec_ secrets (secrets) and returns their
// keys, the first of which signs (none: nothing is signed).
func signingKeys(ev *environ, name string) ([][]byte, error) {
	list, err := secrets(ev, name)
	if err != nil {
		return nil, err
	}
	keys := make([][]byte, len(list))
	for i, s := range list {
		keys[i], _ = webhook.DecodeSecret(s) // checked by secrets
	}
	return keys, nil
}

// secrets reads the variable name as space-separated whsec_ secrets, each checked
// (an error names the variable and the secret's position, never its value).
func secrets(ev *environ, name string) ([]string, error) {
	list := strings.Fields(ev.secret(name))
	for i, s := range list {
		if _, err := webhook.DecodeSecret(s); err != nil {
			return nil, fmt.Errorf("%s: secret %d %v", name, i+1, err)
		}
	}
	return list, nil
}

// registerEvents adds the configured delivery-event endpoints to mux.
func registerEvents(mux *http.ServeMux, pool *pgxpool.Pool, cfg events.Config, logger *slog.Logger) bool {
	cfg.Logger = logger
	paths := events.Register(mux, pool, cfg)
	if len(paths) > 0 {
		logger.Info("receiving delivery events", "paths", paths)
	}
	return len(paths) > 0
}
