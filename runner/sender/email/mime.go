package email

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	mail "github.com/wneessen/go-mail"

	"github.com/herald/herald/runner/sender"
)

// MIME is e as an Internet message (github.com/wneessen/go-mail): From, To, Cc, Reply-To,
// Subject and the Message-ID, e's headers, text and HTML (alternatives when both),
// attachments and inline parts; Bcc only in the envelope, never in a header; the
// return path as the envelope sender. What cannot be written is a permanent failure
// (the payload's; a field only a provider's API sends, ProviderOnly, has the code
// unsupported_field) or, for the return path, configuration (the channel's).
func (e Email) MIME() (*mail.Msg, error) {
	if f := e.ProviderOnly(); f != "" { // sending without it would drop what was asked
		return nil, sender.WithCode(sender.Permanent(fmt.Errorf("payload: %s needs the SendGrid sender; a MIME message cannot carry it", f)), "unsupported_field")
	}
	msg := mail.NewMsg(mail.WithNoDefaultUserAgent()) // no X-Mailer naming our library
	if err := msg.From(e.From); err != nil {
		return nil, sender.Permanent(fmt.Errorf("from: %w", err))
	}
	if e.ReturnPath != "" {
		if err := msg.EnvelopeFrom(e.ReturnPath); err != nil {
			return nil, sender.Configuration(fmt.Errorf("return path: %w", err), "")
		}
	}
	if err := msg.To(e.To); err != nil {
		return nil, sender.Permanent(fmt.Errorf("recipient: %w", err))
	}
	if e.ReplyTo != "" {
		if err := msg.ReplyTo(e.ReplyTo); err != nil {
			return nil, sender.Permanent(fmt.Errorf("reply_to: %w", err))
		}
	}
	if len(e.Cc) > 0 {
		if err := msg.Cc(e.Cc...); err != nil {
			return nil, sender.Permanent(fmt.Errorf("cc: %w", err))
		}
	}
	if len(e.Bcc) > 0 { // in the envelope only, never in a header
		if err := msg.Bcc(e.Bcc...); err != nil {
			return nil, sender.Permanent(fmt.Errorf("bcc: %w", err))
		}
	}
	setHeader(msg, mail.HeaderSubject, e.Subject, true)
	msg.SetMessageIDWithValue(strings.Trim(e.MessageID, "<>"))
	for k, v := range e.Headers {
		setHeader(msg, mail.Header(k), v, false)
	}
	switch {
	case e.Text != "" && e.HTML != "":
		msg.SetBodyString(mail.TypeTextPlain, e.Text)
		msg.AddAlternativeString(mail.TypeTextHTML, e.HTML)
	case e.HTML != "":
		msg.SetBodyString(mail.TypeTextHTML, e.HTML)
	default:
		msg.SetBodyString(mail.TypeTextPlain, e.Text)
	}
	for _, a := range e.Attachments {
		opts := []mail.FileOption{mail.WithFileContentType(mail.ContentType(cmp.Or(a.ContentType, "application/octet-stream")))}
		if a.Inline {
			if a.ContentID != "" {
				opts = append(opts, mail.WithFileContentID(a.ContentID))
			}
			msg.EmbedReadSeeker(a.Filename, bytes.NewReader(a.Content), opts...)
		} else {
			msg.AttachReadSeeker(a.Filename, bytes.NewReader(a.Content), opts...)
		}
	}
	return msg, nil
}

// setHeader sets a header so that receivers read back exactly v: as go-mail encodes
// it (RFC 2047 when it is not plain ASCII, folded at spaces), except that text which
// itself looks like an encoded word ("=?…?=") is encoded too, or receivers would
// decode it into other text, and, when long is true (unstructured text such as the
// subject), so is text with a word too long to fold, whose line would pass RFC 5322's
// 998 characters (relays refuse or cut it). Encoded words are folded one a line.
func setHeader(msg *mail.Msg, h mail.Header, v string, long bool) {
	if !strings.Contains(v, "=?") && !(long && slices.ContainsFunc(strings.Split(v, " "), func(w string) bool { return len(w) > 60 })) {
		msg.SetGenHeader(h, v)
		return
	}
	var words []string
	for len(v) > 0 {
		n := min(len(v), 45) // 45 bytes: 60 of base64, an encoded word within 75 characters
		for n < len(v) && !utf8.RuneStart(v[n]) {
			n--
		}
		words = append(words, "=?UTF-8?B?"+base64.StdEncoding.EncodeToString([]byte(v[:n]))+"?=")
		v = v[n:]
	}
	msg.SetGenHeaderPreformatted(h, strings.Join(words, "\r\n "))
}
