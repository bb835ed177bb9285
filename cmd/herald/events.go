package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald/herald/runner/events"
	"github.com/herald/herald/runner/sender/webhook"
)

// eventsConfig reads the delivery-event endpoints' settings (runner/events); each
// endpoint is on only when its secret is set:
//
//	HERALD_SENDGRID_EVENT_KEY        SendGrid's verification key → /v1/events/sendgrid
//	HERALD_TWILIO_STATUS_CALLBACK    the public URL of /v1/events/twilio, verified with
//	                                 HERALD_TWILIO_AUTH_TOKEN (required with it)
//	HERALD_TWILIO_INBOUND_URL        the public URL of /v1/events/twilio-inbound (STOP
//	                                 and START), verified with HERALD_TWILIO_AUTH_TOKEN
//	HERALD_EVENTS_SECRETS            whsec_ secrets → /v1/events/generic
//	HERALD_UNSUBSCRIBE_SECRETS       whsec_ secrets of the one-click unsubscribe links
//	                                 (the first makes them) → /v1/unsubscribe/{token}
//	HERALD_EVENTS_TOLERANCE          age of a signed timestamp (5m)
//	HERALD_EVENTS_MAX_BODY_BYTES     body limit (5 MiB)
func eventsConfig(ev *environ) (events.Config, error) {
	cfg := events.Config{Tolerance: ev.duration("HERALD_EVENTS_TOLERANCE", 5*time.Minute),
		MaxBodyBytes: int64(ev.int("HERALD_EVENTS_MAX_BODY_BYTES", 5<<20))}
	if k := ev.str("HERALD_SENDGRID_EVENT_KEY", ""); k != "" {
		key, err := events.ParseSendGridKey(k)
		if err != nil {
			return cfg, fmt.Errorf("HERALD_SENDGRID_EVENT_KEY: %w", err)
		}
		cfg.SendGridKey = key
	}
	if u := ev.str("HERALD_TWILIO_STATUS_CALLBACK", ""); u != "" {
		cfg.TwilioURL, cfg.TwilioAuthToken = u, ev.secret("HERALD_TWILIO_AUTH_TOKEN")
		if cfg.TwilioAuthToken == "" {
			return cfg, fmt.Errorf("HERALD_TWILIO_STATUS_CALLBACK needs HERALD_TWILIO_AUTH_TOKEN: Twilio signs its callbacks with the account's auth token")
		}
	}
	if u := ev.str("HERALD_TWILIO_INBOUND_URL", ""); u != "" {
		cfg.TwilioInboundURL, cfg.TwilioAuthToken = u, ev.secret("HERALD_TWILIO_AUTH_TOKEN")
		if cfg.TwilioAuthToken == "" {
			return cfg, fmt.Errorf("HERALD_TWILIO_INBOUND_URL needs HERALD_TWILIO_AUTH_TOKEN: Twilio signs its webhooks with the account's auth token")
		}
	}
	cfg.GenericSecrets = strings.Fields(ev.secret("HERALD_EVENTS_SECRETS"))
	for i, s := range cfg.GenericSecrets {
		if _, err := webhook.DecodeSecret(s); err != nil {
			return cfg, fmt.Errorf("HERALD_EVENTS_SECRETS: secret %d %v", i+1, err)
		}
	}
	keys, err := unsubscribeKeys(ev)
	if err != nil {
		return cfg, err
	}
	cfg.UnsubscribeKeys = keys
	return cfg, ev.err()
}

// unsubscribeKeys reads HERALD_UNSUBSCRIBE_SECRETS: the keys of the one-click
// unsubscribe links, the first of which makes them (none: no links, no endpoint).
func unsubscribeKeys(ev *environ) ([][]byte, error) {
	var keys [][]byte
	for i, s := range strings.Fields(ev.secret("HERALD_UNSUBSCRIBE_SECRETS")) {
		k, err := webhook.DecodeSecret(s)
		if err != nil {
			return nil, fmt.Errorf("HERALD_UNSUBSCRIBE_SECRETS: secret %d %v", i+1, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
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
