package events

import (
	"net/textproto"
	"regexp"
	"strings"
)

// dsnEvents maps a delivery status notification's recipient blocks to events, one
// per recipient with its address (the Original-Recipient herald gave, else the
// Final-Recipient), so SQL tells the To's from a copy's. Each Action gives the event:
// failed → undelivered, delayed → deferred, delivered → delivered; relayed and
// expanded are ignored. The code is the receiving server's reply and the Status
// ("550 5.1.1"), the form of an SMTP refusal at send, so SQL suppresses the address
// on the same codes (herald._suppression_reason). The event id is the report's own
// Message-ID, the recipient and the action, so a report delivered twice is recorded
// once.
func dsnEvents(blocks []textproto.MIMEHeader, reportID string, base event) ([]event, int) {
	var out []event
	ignored := 0
	for _, b := range blocks {
		rcpt := firstOf(address(b.Get("Original-Recipient")), address(b.Get("Final-Recipient")))
		if rcpt == "" {
			ignored++
			continue
		}
		diag := strings.TrimSpace(b.Get("Diagnostic-Code"))
		code := strings.TrimSpace(strings.SplitN(b.Get("Status"), " ", 2)[0])
		if !enhancedStatus.MatchString(code) {
			code = "" // not an RFC 3463 status: no code rather than a made-up one
		} else if typ, text, ok := strings.Cut(diag, ";"); ok && strings.EqualFold(strings.TrimSpace(typ), "smtp") {
			if m := smtpReply.FindString(strings.TrimSpace(text)); m != "" {
				code = m[:3] + " " + code // "550 5.1.1", as the SMTP sender reports a refusal
			}
		}
		action := strings.ToLower(strings.TrimSpace(b.Get("Action")))
		ev := base
		ev.EventID, ev.Recipient, ev.Code, ev.Reason = reportID+" "+strings.ToLower(rcpt)+" "+action, rcpt, code, diag
		switch action {
		case "failed":
			ev.Event = "undelivered"
		case "delayed":
			ev.Event = "deferred"
		case "delivered":
			ev.Event = "delivered"
		default: // relayed, expanded: not an outcome
			ignored++
			continue
		}
		out = append(out, ev)
	}
	return out, ignored
}

// smtpReply is an SMTP reply code at the start of a Diagnostic-Code's text;
// enhancedStatus an RFC 3463 status.
var (
	smtpReply      = regexp.MustCompile(`^[245][0-9][0-9]([ -]|$)`)
	enhancedStatus = regexp.MustCompile(`^[245]\.[0-9]{1,3}\.[0-9]{1,3}$`)
)
