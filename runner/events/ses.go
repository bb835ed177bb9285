package events

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/herald/herald/runner/sender/email"
)

// SNSHosts are the hosts Amazon SNS serves its signing certificates and subscription
// confirmations from: sns.<region>.amazonaws.com (.cn in China).
var SNSHosts = regexp.MustCompile(`^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$`)

// snsMessage is what Amazon SNS posts to an HTTP(S) subscription.
type snsMessage struct {
	Type             string  `json:"Type"`
	MessageID        string  `json:"MessageId"`
	Token            string  `json:"Token"`
	TopicArn         string  `json:"TopicArn"`
	Subject          *string `json:"Subject"`
	Message          string  `json:"Message"`
	Timestamp        string  `json:"Timestamp"`
	SignatureVersion string  `json:"SignatureVersion"`
	Signature        string  `json:"Signature"`
	SigningCertURL   string  `json:"SigningCertURL"`
	SubscribeURL     string  `json:"SubscribeURL"`
}

// signed is the text SNS signs: each field's name and value on their own lines, in
// the documented order for the message's type.
func (m *snsMessage) signed() string {
	var b strings.Builder
	add := func(k, v string) {
		b.WriteString(k + "\n" + v + "\n")
	}
	add("Message", m.Message)
	add("MessageId", m.MessageID)
	if m.Type == "Notification" {
		if m.Subject != nil {
			add("Subject", *m.Subject)
		}
	} else {
		add("SubscribeURL", m.SubscribeURL)
	}
	add("Timestamp", m.Timestamp)
	if m.Type != "Notification" {
		add("Token", m.Token)
	}
	add("TopicArn", m.TopicArn)
	add("Type", m.Type)
	return b.String()
}

// snsURL parses an https URL on one of SNS's hosts (Config.SNSHosts), or fails.
func (h *handler) snsURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.User != nil || !h.cfg.SNSHosts.MatchString(u.Hostname()) {
		return nil, fmt.Errorf("%q is not an https URL of Amazon SNS", raw)
	}
	return u, nil
}

// snsCert returns the signing certificate at raw, an https URL on SNS's hosts ending
// in .pem, fetched once and kept (at most 32); it must chain to Config.SNSRoots.
func (h *handler) snsCert(ctx context.Context, raw string) (*x509.Certificate, error) {
	u, err := h.snsURL(raw)
	if err != nil || !strings.HasSuffix(u.Path, ".pem") {
		return nil, fmt.Errorf("signing certificate: %q is not an https .pem URL of Amazon SNS", raw)
	}
	h.mu.Lock()
	cert := h.certs[raw]
	h.mu.Unlock()
	if cert != nil {
		return cert, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := h.cfg.SNSClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("signing certificate: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	block, _ := pem.Decode(b)
	if resp.StatusCode != http.StatusOK || block == nil {
		return nil, fmt.Errorf("signing certificate: %s answered %d without a PEM certificate", u.Host, resp.StatusCode)
	}
	if cert, err = x509.ParseCertificate(block.Bytes); err != nil {
		return nil, fmt.Errorf("signing certificate: %w", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: h.cfg.SNSRoots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, fmt.Errorf("signing certificate: %w", err)
	}
	h.mu.Lock()
	if len(h.certs) >= 32 {
		clear(h.certs)
	}
	h.certs[raw] = cert
	h.mu.Unlock()
	return cert, nil
}

// ses verifies an Amazon SNS message from one of Config.SESTopics (RSA over SHA-1 or
// SHA-256 of the signed fields, with the certificate SNS names, on SNS's own hosts),
// confirms a subscription by visiting its SubscribeURL, and maps a notification of
// Amazon SES (identity notifications or event publishing) to an event per recipient.
func (h *handler) ses(r *http.Request, body []byte) (json.RawMessage, int, error) {
	var m snsMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, 0, fmt.Errorf("the body must be an Amazon SNS message: %v", err)
	}
	if !slices.Contains(h.cfg.SESTopics, m.TopicArn) {
		h.cfg.Logger.Warn("Amazon SNS message of a topic not in HERALD_SES_TOPIC_ARNS", "topic", m.TopicArn)
		return nil, 0, errSignature
	}
	hash := map[string]crypto.Hash{"1": crypto.SHA1, "2": crypto.SHA256}[m.SignatureVersion]
	sig, err := base64.StdEncoding.DecodeString(m.Signature)
	if hash == 0 || err != nil || len(sig) == 0 {
		return nil, 0, errSignature
	}
	cert, err := h.snsCert(r.Context(), m.SigningCertURL)
	if err != nil {
		h.cfg.Logger.Warn("Amazon SNS message refused", "err", err)
		return nil, 0, errSignature
	}
	var digest []byte
	if hash == crypto.SHA1 {
		d := sha1.Sum([]byte(m.signed()))
		digest = d[:]
	} else {
		d := sha256.Sum256([]byte(m.signed()))
		digest = d[:]
	}
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok || rsa.VerifyPKCS1v15(pub, hash, digest, sig) != nil {
		return nil, 0, errSignature
	}
	switch m.Type {
	case "SubscriptionConfirmation":
		return nil, 1, h.snsSubscribe(r.Context(), m)
	case "UnsubscribeConfirmation":
		h.cfg.Logger.Warn("Amazon SNS unsubscribed this endpoint from a topic", "topic", m.TopicArn)
		return nil, 1, nil
	case "Notification":
		return sesEvent(m)
	}
	return nil, 0, fmt.Errorf("unknown Amazon SNS message type %q", m.Type)
}

// snsSubscribe confirms a subscription: a GET of its SubscribeURL (on SNS's hosts).
func (h *handler) snsSubscribe(ctx context.Context, m snsMessage) error {
	u, err := h.snsURL(m.SubscribeURL)
	if err != nil {
		return fmt.Errorf("SubscribeURL: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := h.cfg.SNSClient.Do(req)
	if err != nil {
		return fmt.Errorf("confirming the subscription: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("confirming the subscription: Amazon SNS answered %d", resp.StatusCode)
	}
	h.cfg.Logger.Info("Amazon SNS subscription confirmed", "topic", m.TopicArn)
	return nil
}

// sesRecipient is one recipient of a bounce, complaint or delay.
type sesRecipient struct {
	EmailAddress   string `json:"emailAddress"`
	Status         string `json:"status"`
	DiagnosticCode string `json:"diagnosticCode"`
}

// sesNotification is the part of an Amazon SES notification herald reads.
type sesNotification struct {
	NotificationType string `json:"notificationType"` // identity notifications
	EventType        string `json:"eventType"`        // event publishing
	Mail             struct {
		MessageID     string `json:"messageId"`
		Timestamp     string `json:"timestamp"`
		CommonHeaders struct {
			MessageID string `json:"messageId"`
		} `json:"commonHeaders"`
	} `json:"mail"`
	Bounce *struct {
		BounceType        string         `json:"bounceType"`
		BounceSubType     string         `json:"bounceSubType"`
		BouncedRecipients []sesRecipient `json:"bouncedRecipients"`
		Timestamp         string         `json:"timestamp"`
	} `json:"bounce"`
	Complaint *struct {
		ComplainedRecipients  []sesRecipient `json:"complainedRecipients"`
		ComplaintFeedbackType string         `json:"complaintFeedbackType"`
		Timestamp             string         `json:"timestamp"`
	} `json:"complaint"`
	Delivery *struct {
		Recipients   []string `json:"recipients"`
		SMTPResponse string   `json:"smtpResponse"`
		Timestamp    string   `json:"timestamp"`
	} `json:"delivery"`
	DeliveryDelay *struct {
		DelayType         string         `json:"delayType"`
		DelayedRecipients []sesRecipient `json:"delayedRecipients"`
		Timestamp         string         `json:"timestamp"`
	} `json:"deliveryDelay"`
	Reject *struct {
		Reason string `json:"reason"`
	} `json:"reject"`
}

// sesEvent maps one SES notification to herald's events, one per recipient it names
// (the To's and the copies'; SQL tells them apart): matched by the Message-ID herald
// set, which SES reports in mail.commonHeaders (identity notifications include it
// when "Include original headers" is on). A complaint naming no recipient and a
// reject are the message's. Event ids are SNS's MessageId and the recipient.
func sesEvent(m snsMessage) (json.RawMessage, int, error) {
	var n sesNotification
	if err := json.Unmarshal([]byte(m.Message), &n); err != nil {
		return nil, 0, fmt.Errorf("Message: not an Amazon SES notification: %v", err)
	}
	base := event{EventID: m.MessageID, ProviderMessageID: n.Mail.MessageID}
	if id, _, ok := email.ParseMessageID(n.Mail.CommonHeaders.MessageID, nil); ok { // SNS signed it: no tag needed
		base.MessageID = &id
		base.ProviderMessageID = "<" + strings.Trim(strings.TrimSpace(n.Mail.CommonHeaders.MessageID), "<>") + ">"
	}
	var evs []event
	// each adds base with the kind's fields for every recipient rs names (none: the
	// message's).
	each := func(at string, rs []sesRecipient, fill func(ev *event, r sesRecipient)) {
		if t, err := time.Parse(time.RFC3339Nano, at); err == nil {
			s := t.UTC().Format(time.RFC3339Nano)
			base.At = &s
		}
		if len(rs) == 0 {
			rs = []sesRecipient{{}}
		}
		for _, r := range rs {
			ev := base
			if r.EmailAddress != "" {
				ev.Recipient = r.EmailAddress
				ev.EventID = m.MessageID + " " + strings.ToLower(r.EmailAddress)
			}
			fill(&ev, r)
			evs = append(evs, ev)
		}
	}
	switch kind := firstOf(n.NotificationType, n.EventType); {
	case kind == "Send": // SES took it: settles a send in doubt
		each(n.Mail.Timestamp, nil, func(ev *event, _ sesRecipient) { ev.Event = "processed" })
	case kind == "Delivery" && n.Delivery != nil:
		rs := make([]sesRecipient, len(n.Delivery.Recipients))
		for i, a := range n.Delivery.Recipients {
			rs[i].EmailAddress = a
		}
		each(n.Delivery.Timestamp, rs, func(ev *event, _ sesRecipient) {
			ev.Event, ev.Reason = "delivered", n.Delivery.SMTPResponse
		})
	case kind == "Bounce" && n.Bounce != nil:
		each(n.Bounce.Timestamp, n.Bounce.BouncedRecipients, func(ev *event, r sesRecipient) {
			ev.Event, ev.Type, ev.Code, ev.Reason = "bounced", "soft", r.Status, firstOf(r.DiagnosticCode, n.Bounce.BounceSubType)
			if n.Bounce.BounceType == "Permanent" {
				ev.Type = "hard"
			}
		})
	case kind == "Complaint" && n.Complaint != nil && strings.EqualFold(n.Complaint.ComplaintFeedbackType, "not-spam"):
		return nil, 1, nil // the mailbox provider says the mail was not spam: no complaint
	case kind == "Complaint" && n.Complaint != nil:
		each(n.Complaint.Timestamp, n.Complaint.ComplainedRecipients, func(ev *event, _ sesRecipient) {
			ev.Event, ev.Reason = "complained", n.Complaint.ComplaintFeedbackType
		})
	case kind == "DeliveryDelay" && n.DeliveryDelay != nil:
		each(n.DeliveryDelay.Timestamp, n.DeliveryDelay.DelayedRecipients, func(ev *event, r sesRecipient) {
			ev.Event, ev.Code, ev.Reason = "deferred", r.Status, strings.TrimSpace(n.DeliveryDelay.DelayType+" "+r.DiagnosticCode)
		})
	case kind == "Reject" && n.Reject != nil:
		each("", nil, func(ev *event, _ sesRecipient) { ev.Event, ev.Reason = "undelivered", n.Reject.Reason })
	default: // Open, Click, Rendering Failure, Subscription: no outcome
		return nil, 1, nil
	}
	if m.MessageID == "" {
		return nil, 0, errors.New("MessageId: missing")
	}
	return encode(evs, 0, nil)
}
