package events

import (
	"net/mail"
	"net/textproto"
	"strings"
	"time"
)

// arfEvents maps a feedback report's fields (RFC 5965: a complaint a mailbox
// provider's feedback loop sends) to a 'complained' event for Feedback-Type abuse,
// fraud or virus; not-spam, auth-failure and other are ignored. The recipient is the
// Original-Rcpt-To when the provider gives it unredacted (SQL tells the To's from a
// copy's); feedback loops often redact it, and the complaint is then the message's
// recipient's. The event id is the report's own Message-ID.
func arfEvents(fields textproto.MIMEHeader, reportID string, base event) ([]event, int) {
	typ := strings.ToLower(strings.TrimSpace(fields.Get("Feedback-Type")))
	if typ != "abuse" && typ != "fraud" && typ != "virus" {
		return nil, 1
	}
	ev := base
	ev.EventID, ev.Event = reportID+" complained", "complained"
	ev.Reason = strings.TrimSpace(typ + " " + fields.Get("User-Agent"))
	if a, err := mail.ParseAddress(fields.Get("Original-Rcpt-To")); err == nil && !redacted(a.Address) {
		ev.Recipient = a.Address
	}
	if t, err := mail.ParseDate(fields.Get("Arrival-Date")); err == nil {
		s := t.UTC().Format(time.RFC3339)
		ev.At = &s
	}
	return []event{ev}, 0
}

// redacted reports whether a feedback loop has blanked the address's mailbox
// ("xxxxxxxx@example.net", "redacted@example.net"), as RFC 6590 lets it.
func redacted(addr string) bool {
	local, _, _ := strings.Cut(strings.ToLower(addr), "@")
	return local == "redacted" || strings.Trim(local, "x*") == ""
}
