// Package email turns a herald message of an e-mail channel into the parts of an
// e-mail, for the SMTP and SendGrid senders alike.
//
// Payload fields: subject (required), text and/or html (body is taken as text when
// text is absent), and optionally from, reply_to, headers (an object of strings) and
// cc and bcc (arrays of addresses; herald._payload_fields lists what SQL accepts).
// from and reply_to fall back to the channel's defaults. The Message-ID is derived
// from the herald message id, so a resend after a crash carries the same id and is
// recognisable downstream.
package email

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"strings"

	"github.com/herald/herald/runner/sender"
)

// Defaults are a channel's fallbacks for what a payload leaves out.
type Defaults struct {
	From    string // e.g. "Herald <noreply@example.com>"
	ReplyTo string
	// MessageIDDomain is the right-hand side of Message-IDs (default: the domain of From).
	MessageIDDomain string
}

// Email is one e-mail ready to send.
type Email struct {
	From      string
	ReplyTo   string
	To        string
	Subject   string
	Text      string
	HTML      string
	Headers   map[string]string
	Cc, Bcc   []string
	MessageID string // with angle brackets: <herald-42@example.com>
}

type payload struct {
	Subject string            `json:"subject"`
	Text    string            `json:"text"`
	HTML    string            `json:"html"`
	Body    string            `json:"body"`
	From    string            `json:"from"`
	ReplyTo string            `json:"reply_to"`
	Headers map[string]string `json:"headers"`
	Cc      []string          `json:"cc"`
	Bcc     []string          `json:"bcc"`
}

// reserved headers are set by herald and may not be overridden from a payload.
var reserved = map[string]bool{"from": true, "to": true, "cc": true, "bcc": true, "subject": true,
	"message-id": true, "reply-to": true, "content-type": true, "mime-version": true, "content-transfer-encoding": true}

// Build makes the e-mail for m. A payload that cannot make an e-mail is a permanent
// failure: sending it again would not help.
func Build(m sender.Message, d Defaults) (Email, error) {
	var p payload
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		return Email{}, sender.Permanent(fmt.Errorf("payload: %w", err))
	}
	e := Email{From: p.From, ReplyTo: p.ReplyTo, To: m.Recipient, Subject: p.Subject, Text: p.Text, HTML: p.HTML, Headers: p.Headers,
		Cc: p.Cc, Bcc: p.Bcc}
	if e.From == "" {
		e.From = d.From
	}
	if e.ReplyTo == "" {
		e.ReplyTo = d.ReplyTo
	}
	if e.Text == "" && e.HTML == "" {
		e.Text = p.Body
	}
	switch {
	case e.From == "":
		return Email{}, sender.Permanent(errors.New("no from address: set the payload's from or the channel's default"))
	case e.Subject == "":
		return Email{}, sender.Permanent(errors.New("payload: no subject"))
	case e.Text == "" && e.HTML == "":
		return Email{}, sender.Permanent(errors.New("payload: no text, html or body"))
	}
	from, err := mail.ParseAddress(e.From)
	if err != nil {
		return Email{}, sender.Permanent(fmt.Errorf("from address %q: %w", e.From, err))
	}
	for _, a := range append(append([]string(nil), e.Cc...), e.Bcc...) {
		if _, err := mail.ParseAddress(a); err != nil {
			return Email{}, sender.Permanent(fmt.Errorf("payload: cc/bcc address %q: %w", a, err))
		}
	}
	for k, v := range e.Headers {
		if reserved[strings.ToLower(k)] || strings.ContainsAny(k, ": \r\n") || strings.ContainsAny(v, "\r\n") {
			return Email{}, sender.Permanent(fmt.Errorf("payload: header %q cannot be set", k))
		}
	}
	domain := d.MessageIDDomain
	if domain == "" {
		domain = from.Address[strings.LastIndex(from.Address, "@")+1:]
	}
	e.MessageID = fmt.Sprintf("<herald-%d@%s>", m.ID, domain)
	return e, nil
}
