// Package email turns a herald message of an e-mail channel into the parts of an
// e-mail, for the SMTP and SendGrid senders alike.
//
// Payload fields (herald._payload_fields and herald._payload_problem state what SQL
// accepts): subject and text and/or html (body is taken as text when text is absent),
// unless template_id names a provider template; optionally from, reply_to, headers
// (an object of strings), cc and bcc (arrays of addresses), attachments ({filename,
// content (base64), content_type, disposition, content_id}), and the SendGrid-only
// template_id, dynamic_template_data, categories and custom_args. from and reply_to
// fall back to the channel's defaults; a channel with an unsubscribe URL adds
// one-click List-Unsubscribe headers (RFC 8058) to a message without copies. The
// Message-ID is the herald message id signed with the installation's key (MessageID),
// so a resend after a crash carries the same Message-ID and nobody else can make one.
package email

import (
	"context"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/herald/herald/runner/idtag"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/unsubscribe"
)

// Defaults are a channel's fallbacks for what a payload leaves out.
type Defaults struct {
	From    string // e.g. "Herald <noreply@example.com>"
	ReplyTo string
	// MessageIDDomain is the right-hand side of Message-IDs (default: the domain of From).
	MessageIDDomain string
	// MessageIDKey gives the key that signs Message-IDs (MessageID): the newest of
	// herald.message_id_keys (idtag.LoadKeys), so every runner signs alike, a
	// bounce that quotes a Message-ID is known to be about a mail herald sent, and
	// nobody without the key can predict one. Required: without it Build fails the
	// message as configuration (the channel pauses); its error is Build's.
	MessageIDKey idtag.KeySource
	// ReturnPath is the envelope sender (SMTP MAIL FROM), the address bounces go back
	// to, when it is not From (HERALD_<CHANNEL>_RETURN_PATH): a mailbox that pipes
	// them to `herald mail-report`. A bare address.
	ReturnPath string
	// UnsubscribeURL, when set, is the public URL of herald's unsubscribe endpoint
	// (HERALD_<CHANNEL>_UNSUBSCRIBE_URL): each e-mail gets one-click List-Unsubscribe
	// headers (RFC 8058) with its own link, signed with UnsubscribeKey, unless its
	// payload sets List-Unsubscribe itself or it has copies (cc, bcc): the link
	// names the message, so a copy's recipient who clicked it would unsubscribe the
	// To and stay subscribed.
	UnsubscribeURL string
	UnsubscribeKey []byte
}

// Email is one e-mail ready to send.
type Email struct {
	From string
	// FromAddress is From's bare address (noreply@example.com).
	FromAddress string
	// ProducerFrom is true when From is the payload's own, not the channel's default
	// (SenderRefused).
	ProducerFrom bool
	// ReturnPath is the envelope sender when it is not From (Defaults.ReturnPath).
	ReturnPath string
	ReplyTo    string
	To         string
	Subject    string
	Text       string
	HTML       string
	Headers    map[string]string
	Cc, Bcc    []string
	MessageID  string // with angle brackets: <herald-42.TAG@example.com> (MessageID)

	Attachments []Attachment

	// The SendGrid-only fields: a sender that cannot honour them refuses the message
	// (ProviderOnly) rather than send it without them.
	TemplateID   string
	TemplateData json.RawMessage
	Categories   []string
	CustomArgs   map[string]string
}

// Attachment is a file sent with an e-mail.
type Attachment struct {
	Filename    string
	ContentType string // default application/octet-stream
	Content     []byte
	Inline      bool   // disposition inline (shown in the body, referenced by ContentID)
	ContentID   string // for inline parts: cid:<ContentID> in the html
}

// ProviderOnly names the first field set that only a provider's own API can send
// (template_id, dynamic_template_data, categories, custom_args), or "".
func (e Email) ProviderOnly() string {
	switch {
	case e.TemplateID != "":
		return "template_id"
	case len(e.TemplateData) > 0:
		return "dynamic_template_data"
	case len(e.Categories) > 0:
		return "categories"
	case len(e.CustomArgs) > 0:
		return "custom_args"
	}
	return ""
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

	Attachments []struct {
		Filename    string `json:"filename"`
		Content     string `json:"content"`
		ContentType string `json:"content_type"`
		Disposition string `json:"disposition"`
		ContentID   string `json:"content_id"`
	} `json:"attachments"`
	TemplateID   string            `json:"template_id"`
	TemplateData json.RawMessage   `json:"dynamic_template_data"`
	Categories   []string          `json:"categories"`
	CustomArgs   map[string]string `json:"custom_args"`
}

// Build makes the e-mail for m. A payload that cannot make an e-mail is a permanent
// failure: sending it again would not help; no Message-ID key is a configuration one.
func Build(ctx context.Context, m sender.Message, d Defaults) (Email, error) {
	var p payload
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		return Email{}, sender.Permanent(fmt.Errorf("payload: %w", err))
	}
	e := Email{From: p.From, ReplyTo: p.ReplyTo, To: m.Recipient, Subject: p.Subject, Text: p.Text, HTML: p.HTML, Headers: p.Headers,
		Cc: p.Cc, Bcc: p.Bcc, TemplateID: p.TemplateID, TemplateData: p.TemplateData, Categories: p.Categories, CustomArgs: p.CustomArgs}
	for i, a := range p.Attachments {
		content, err := base64.StdEncoding.DecodeString(strings.NewReplacer("\r", "", "\n", "").Replace(a.Content))
		if err != nil || a.Filename == "" || strings.ContainsAny(a.Filename, "\r\n\"") {
			return Email{}, sender.Permanent(fmt.Errorf("payload: attachments[%d]: a filename and base64 content are required", i))
		}
		e.Attachments = append(e.Attachments, Attachment{Filename: a.Filename, ContentType: a.ContentType, Content: content,
			Inline: a.Disposition == "inline", ContentID: a.ContentID})
	}
	if e.From == "" {
		e.From = d.From
	}
	e.ProducerFrom = e.From != d.From && !sameAddress(e.From, d.From)
	e.ReturnPath = d.ReturnPath
	if e.ReplyTo == "" {
		e.ReplyTo = d.ReplyTo
	}
	if e.Text == "" && e.HTML == "" {
		e.Text = p.Body
	}
	switch {
	case e.From == "":
		return Email{}, sender.Permanent(errors.New("no from address: set the payload's from or the channel's default"))
	case e.Subject == "" && e.TemplateID == "":
		return Email{}, sender.Permanent(errors.New("payload: no subject"))
	case e.Text == "" && e.HTML == "" && e.TemplateID == "":
		return Email{}, sender.Permanent(errors.New("payload: no text, html or body"))
	}
	from, err := mail.ParseAddress(e.From)
	if err != nil {
		return Email{}, sender.Permanent(fmt.Errorf("from address %q: %w", e.From, err))
	}
	e.FromAddress = from.Address
	for _, a := range append(append([]string(nil), e.Cc...), e.Bcc...) {
		if _, err := mail.ParseAddress(a); err != nil {
			return Email{}, sender.Permanent(fmt.Errorf("payload: cc/bcc address %q: %w", a, err))
		}
	}
	e.Cc, e.Bcc = distinct(e.To, e.Cc, e.Bcc)
	for k, v := range e.Headers { // what herald sets itself SQL refuses (herald._payload_problem)
		if strings.ContainsAny(k, ": \r\n") || strings.ContainsAny(v, "\r\n") {
			return Email{}, sender.Permanent(fmt.Errorf("payload: header %q cannot be set", k))
		}
	}
	if d.UnsubscribeURL != "" && !hasHeader(e.Headers, "List-Unsubscribe") && len(e.Cc)+len(e.Bcc) == 0 {
		h := make(map[string]string, len(e.Headers)+2)
		for k, v := range e.Headers {
			h[k] = v
		}
		h["List-Unsubscribe"] = "<" + unsubscribe.Link(d.UnsubscribeURL, d.UnsubscribeKey, m.ID) + ">"
		h["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
		e.Headers = h
	}
	domain := d.MessageIDDomain
	if domain == "" {
		domain = from.Address[strings.LastIndex(from.Address, "@")+1:]
	}
	if d.MessageIDKey == nil {
		return Email{}, sender.Configuration(errors.New("no Message-ID key"), "")
	}
	key, err := d.MessageIDKey(ctx)
	if err != nil {
		return Email{}, err
	}
	e.MessageID = MessageID(m.ID, key, domain)
	return e, nil
}

// distinct leaves out of cc and bcc each address the message already goes to, the
// recipient or an earlier copy (letter case aside): SendGrid refuses a message that
// names an address twice (400, "Each unique email address in the personalizations
// array should only be included once"), and an SMTP server may deliver it twice.
func distinct(to string, cc, bcc []string) ([]string, []string) {
	seen := map[string]bool{strings.ToLower(to): true}
	keep := func(list []string) []string {
		var out []string
		for _, a := range list {
			if k := strings.ToLower(a); !seen[k] {
				seen[k] = true
				out = append(out, a)
			}
		}
		return out
	}
	return keep(cc), keep(bcc)
}

// MessageID is the Message-ID of herald message id: <herald-ID.TAG@domain>, TAG the
// first 80 bits of the id's idtag for "herald-message-id" under key, in lower-case
// base32. The same for every attempt, so a resend is recognisable (Gmail keeps one
// message per Message-ID); the tag cannot be made without the key, so nobody can
// send a mailbox a Message-ID ahead of herald's (Gmail would drop herald's) or forge
// a bounce naming a herald message.
func MessageID(id int64, key []byte, domain string) string {
	return fmt.Sprintf("<herald-%d.%s@%s>", id, idtag.Text(key, messageIDUse, id), domain)
}

// messageIDUse is what a Message-ID's tag is for (idtag).
const messageIDUse = "herald-message-id"

// heraldMessageID is a Message-ID MessageID made: the id and the tag.
var heraldMessageID = regexp.MustCompile(`^<?herald-([0-9]{1,19})\.([a-z2-7]{16})@[^<>\s]+?>?$`)

// ParseMessageID reads the herald message id from a Message-ID MessageID made (with
// or without its angle brackets), and whether its tag verifies with one of keys
// (always false without keys). ok is false for any other Message-ID.
func ParseMessageID(msgID string, keys [][]byte) (id int64, signed, ok bool) {
	g := heraldMessageID.FindStringSubmatch(strings.TrimSpace(msgID))
	if g == nil {
		return 0, false, false
	}
	id, err := strconv.ParseInt(g[1], 10, 64)
	if err != nil {
		return 0, false, false
	}
	tag, err := base32.StdEncoding.DecodeString(strings.ToUpper(g[2]))
	return id, err == nil && idtag.Valid(keys, messageIDUse, id, tag), true
}

// SenderRefused is what a provider's refusal of the sender identity (a From it has
// not verified, or does not let this account send as) means for e; envelope says the
// refusal answered the envelope sender (SMTP MAIL FROM), which is the channel's
// ReturnPath when it has one. When the refused identity is the producer's own from
// (ProducerFrom), the message fails permanently and the channel goes on, so that one
// producer's from never stops the others' mail; when it is the channel's (its default
// From, its return path), the runner's configuration is wrong and the channel pauses
// (ClassConfiguration) with the message given back. err's code is kept.
func (e Email) SenderRefused(err error, envelope bool) error {
	f := *sender.Classify(err)
	switch {
	case envelope && e.ReturnPath != "":
		f.Class, f.RetryAt = sender.ClassConfiguration, time.Time{}
		f.Err = fmt.Errorf("the provider refused the channel's return path %s: %w", e.ReturnPath, f.Err)
	case e.ProducerFrom:
		f.Class, f.RetryAt = sender.ClassPermanent, time.Time{}
		f.Err = fmt.Errorf("the provider refused the payload's from %s: %w", e.FromAddress, f.Err)
	default:
		f.Class, f.RetryAt = sender.ClassConfiguration, time.Time{}
		f.Err = fmt.Errorf("the provider refused the channel's From %s: %w", e.FromAddress, f.Err)
	}
	return &f
}

// sameAddress reports whether two address strings name the same mailbox (the local
// part as written, the domain in any letter case).
func sameAddress(a, b string) bool {
	x, err1 := mail.ParseAddress(a)
	y, err2 := mail.ParseAddress(b)
	if err1 != nil || err2 != nil {
		return false
	}
	i, j := strings.LastIndex(x.Address, "@"), strings.LastIndex(y.Address, "@")
	return i > 0 && j > 0 && x.Address[:i] == y.Address[:j] && strings.EqualFold(x.Address[i:], y.Address[j:])
}

// hasHeader reports whether headers has name, in any letter case.
func hasHeader(headers map[string]string, name string) bool {
	for k := range headers {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}
