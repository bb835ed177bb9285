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
	"strconv"
	"strings"

	"github.com/herald/herald/runner/sender/email"
)

// ErrNotReport is returned by ReadReport for a mail that is neither a delivery status
// notification nor a feedback report (an auto-reply, a person's answer): nothing to
// record.
var ErrNotReport = errors.New("not a delivery status notification or a feedback report (multipart/report)")

// ReadReport reads one report a mail server pipes in, as mailbox providers and mail
// servers send them, and returns the source and events for
// herald.record_delivery_events (nil: none) with how many of its recipients it
// ignored: a bounce, a delivery status notification (RFC 3464, source 'dsn'), or a
// complaint of a feedback loop, a feedback report (RFC 5965, ARF, source 'arf'). Both
// are multipart/report with the report part and the returned message or its headers.
// The message is herald's by the returned Message-ID, whose tag must verify with one
// of keys (email.MessageID): anyone can mail a report, and a forged one naming a
// message id would otherwise suppress its recipient; a report without the returned
// headers or a verified tag is ignored.
func ReadReport(r io.Reader, keys [][]byte) (string, json.RawMessage, int, error) {
	msg, err := mail.ReadMessage(bufio.NewReader(r))
	if err != nil {
		return "", nil, 0, fmt.Errorf("not a mail: %w", err)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/report" || params["boundary"] == "" {
		return "", nil, 0, ErrNotReport
	}
	var source, want string
	switch strings.ToLower(params["report-type"]) {
	case "delivery-status":
		source, want = "dsn", "delivery-status"
	case "feedback-report":
		source, want = "arf", "feedback-report"
	default:
		return "", nil, 0, ErrNotReport
	}
	var report, returned []byte
	parts := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := parts.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if report != nil && returned != nil {
				break // what follows (the rest of a returned message) is not needed
			}
			return "", nil, 0, fmt.Errorf("the report's parts: %w", err)
		}
		t, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		body, err := io.ReadAll(decoded(p))
		if err != nil && !(report != nil && strings.HasPrefix(t, "message/")) {
			return "", nil, 0, fmt.Errorf("the report's %s part: %w", t, err)
		}
		switch t {
		case "message/" + want, "message/global-" + want:
			report = body
		case "text/rfc822-headers", "message/rfc822", "message/rfc822-headers", "message/global", "message/global-headers":
			returned = body
		}
	}
	if report == nil {
		return "", nil, 0, ErrNotReport
	}
	blocks, err := fieldBlocks(report)
	if err != nil || len(blocks) == 0 || source == "dsn" && len(blocks) < 2 {
		return "", nil, 0, fmt.Errorf("the message/%s part has no fields", want)
	}
	var orig mail.Header
	if returned != nil {
		if m, err := mail.ReadMessage(bytes.NewReader(append(returned, '\r', '\n', '\r', '\n'))); err == nil {
			orig = m.Header
		}
	}
	named := orig.Get("Message-Id")
	id, signed, _ := email.ParseMessageID(named, keys)
	if !signed && source == "dsn" {
		// No headers returned (or not herald's): the envelope id the SMTP sender gave
		// (ENVID, the same signed Message-ID) names the message.
		named = unxtext(blocks[0].Get("Original-Envelope-Id"))
		id, signed, _ = email.ParseMessageID(named, keys)
	}
	if !signed {
		return source, nil, max(len(blocks)-1, 1), nil // not herald's, or forged
	}
	reportID := strings.TrimSpace(msg.Header.Get("Message-Id"))
	if reportID == "" {
		sum := sha256.Sum256(report)
		reportID = hex.EncodeToString(sum[:16])
	}
	base := event{MessageID: &id, ProviderMessageID: "<" + strings.Trim(strings.TrimSpace(named), "<>") + ">"}
	var evs []event
	var ignored int
	if source == "arf" {
		evs, ignored = arfEvents(blocks[0], reportID, base)
	} else {
		evs, ignored = dsnEvents(blocks[1:], reportID, base)
	}
	b, n, err := encode(evs, ignored, nil)
	return source, b, n, err
}

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

// unxtext decodes RFC 3461 xtext ("+" and two hexadecimal digits for a byte); what is
// not xtext is returned as it is.
func unxtext(s string) string {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "+") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '+' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
