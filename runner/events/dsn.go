package events

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"regexp"
	"strings"

	"github.com/herald/herald/runner/sender/email"
)

// ErrNotDSN is returned by ReadDSN for a mail that is not a delivery status
// notification (an auto-reply, a person's answer): nothing to record.
var ErrNotDSN = errors.New("not a delivery status notification (multipart/report; report-type=delivery-status)")

// ReadDSN reads a bounce as mail servers send it, a delivery status notification
// (RFC 3464: multipart/report with a message/delivery-status part and the returned
// message or its headers), and returns the events for herald.record_delivery_events
// (source 'dsn'; nil: none) with how many recipients it ignored. Each recipient's
// Action gives the event: failed → undelivered, delayed → deferred, delivered →
// delivered; relayed and expanded are ignored. The code is the reply the receiving
// server gave and the Status ("550 5.1.1"), the form of an SMTP refusal at send, so
// SQL suppresses the address on the same codes (herald._suppression_reason). The
// message is herald's by the returned Message-ID, whose tag must verify with one of
// keys (email.MessageID): anyone can mail a bounce, and a forged one naming a message
// id would otherwise suppress its recipient: a report without the returned headers or
// without a verified tag is ignored. Each event names its recipient (the
// Original-Recipient herald gave, else the Final-Recipient), so SQL tells the To's
// from a copy's. The event id is the report's own Message-ID (its hash when it has
// none), the recipient and the action, so a report delivered twice is recorded once.
func ReadDSN(r io.Reader, keys [][]byte) (json.RawMessage, int, error) {
	msg, err := mail.ReadMessage(bufio.NewReader(r))
	if err != nil {
		return nil, 0, fmt.Errorf("not a mail: %w", err)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/report" || !strings.EqualFold(params["report-type"], "delivery-status") || params["boundary"] == "" {
		return nil, 0, ErrNotDSN
	}
	var status, returned []byte
	parts := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := parts.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if status != nil && returned != nil {
				break // what follows (the rest of a returned message) is not needed
			}
			return nil, 0, fmt.Errorf("the report's parts: %w", err)
		}
		t, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		body, err := io.ReadAll(decoded(p))
		if err != nil && !(status != nil && strings.HasPrefix(t, "message/")) {
			return nil, 0, fmt.Errorf("the report's %s part: %w", t, err)
		}
		switch t {
		case "message/delivery-status", "message/global-delivery-status":
			status = body
		case "text/rfc822-headers", "message/rfc822", "message/rfc822-headers", "message/global", "message/global-headers":
			returned = body
		}
	}
	if status == nil {
		return nil, 0, ErrNotDSN
	}
	blocks, err := fieldBlocks(status)
	if err != nil || len(blocks) < 2 {
		return nil, 0, errors.New("the message/delivery-status part has no recipient fields")
	}
	var orig mail.Header
	if returned != nil {
		if m, err := mail.ReadMessage(bytes.NewReader(append(returned, '\r', '\n', '\r', '\n'))); err == nil {
			orig = m.Header
		}
	}
	id, signed, _ := email.ParseMessageID(orig.Get("Message-Id"), keys)
	if !signed {
		return nil, len(blocks) - 1, nil // not herald's, or forged
	}
	reportID := strings.TrimSpace(msg.Header.Get("Message-Id"))
	if reportID == "" {
		sum := sha256.Sum256(status)
		reportID = hex.EncodeToString(sum[:16])
	}
	var out []event
	ignored := 0
	for _, b := range blocks[1:] {
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
		ev := event{EventID: reportID + " " + strings.ToLower(rcpt) + " " + action, MessageID: &id,
			ProviderMessageID: "<" + strings.Trim(strings.TrimSpace(orig.Get("Message-Id")), "<>") + ">",
			Recipient:         rcpt, Code: code, Reason: diag}
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
	return encode(out, ignored, nil)
}

// smtpReply is an SMTP reply code at the start of a Diagnostic-Code's text;
// enhancedStatus an RFC 3463 status.
var (
	smtpReply      = regexp.MustCompile(`^[245][0-9][0-9]([ -]|$)`)
	enhancedStatus = regexp.MustCompile(`^[245]\.[0-9]{1,3}\.[0-9]{1,3}$`)
)

// fieldBlocks reads the groups of header fields of a delivery-status part: the
// per-message fields, then one group per recipient, separated by blank lines.
func fieldBlocks(b []byte) ([]textproto.MIMEHeader, error) {
	r := textproto.NewReader(bufio.NewReader(bytes.NewReader(append(bytes.TrimLeft(b, "\r\n"), '\r', '\n', '\r', '\n'))))
	var out []textproto.MIMEHeader
	for {
		h, err := r.ReadMIMEHeader()
		if len(h) > 0 {
			out = append(out, h)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		// Blank lines between groups: skip any beyond the one that ended the group.
		for {
			peek, err := r.R.Peek(1)
			if err != nil {
				return out, nil
			}
			if peek[0] != '\r' && peek[0] != '\n' {
				break
			}
			r.R.ReadByte()
		}
	}
}

// address is the address of a recipient field, "rfc822; ana@example.com".
func address(field string) string {
	typ, addr, ok := strings.Cut(field, ";")
	if !ok || !strings.EqualFold(strings.TrimSpace(typ), "rfc822") {
		return ""
	}
	if a := strings.Trim(strings.TrimSpace(addr), "<>"); len(a) <= 320 {
		return a
	}
	return "" // longer than any address herald sends to
}

// decoded is a part's body with its Content-Transfer-Encoding undone (quoted-printable
// and base64; 7bit and 8bit as they are).
func decoded(p *multipart.Part) io.Reader {
	switch strings.ToLower(strings.TrimSpace(p.Header.Get("Content-Transfer-Encoding"))) {
	case "quoted-printable":
		return quotedprintable.NewReader(p)
	case "base64":
		return base64.NewDecoder(base64.StdEncoding, p) // line breaks are skipped
	}
	return p
}
