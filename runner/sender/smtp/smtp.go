// Package smtp delivers e-mail over SMTP with github.com/wneessen/go-mail.
//
// STARTTLS is required by default (Config.TLS "starttls"); "tls" is implicit TLS
// (SMTPS, port 465) and "none" an explicit opt-out for local relays. AUTH PLAIN,
// LOGIN or CRAM-MD5 when a username is set. Connections are kept in a small pool and
// reused from one message to the next. go-mail dials, authenticates and renders the
// message; the transaction is this package's (transact): MAIL, RCPT and DATA in one
// round trip when the server offers PIPELINING, the data in a second, no NOOP or RSET.
//
// # Failure classes
//
//	530, 534, 535, 538 (authentication)     configuration: the runner's credentials are
//	                                        wrong, not the message (the channel is
//	                                        paused; no attempt is used)
//	a 5yz refusal of the account or its IP  configuration (accountRefused: SES's paused
//	                                        or suspended sending, Microsoft 365's
//	                                        tenant and IP blocks, a relay refusing
//	                                        this client)
//	5.4.5 (Gmail's daily sending limit),
//	SubmissionQuotaExceeded (Microsoft 365),
//	"Daily message quota exceeded" (SES),
//	"Maximum credits exceeded" (SendGrid)    quota: the channel pauses for its quota_wait
//	421, 450, 451, 452, 454 with enhanced
//	code 4.7.x or 4.2.1, or saying rate,
//	throttl…, too many (not "too many
//	recipients", 4.5.3)                     rate_limited, retry in Config.ThrottleWait
//	a refusal of the sender: a 5yz reply    the payload's own from: permanent (that
//	to MAIL FROM, 5.1.7, 5.1.8, 5.7.60,     message only); the channel's default
//	SES "Email address is not verified"     From: configuration (email.SenderRefused;
//	naming the from                         Check names it in MAIL FROM)
//	other 5yz reply                         permanent (550 unknown mailbox…)
//	other 4yz reply                         transient
//	untrusted certificate, unknown host     configuration (sender.FromNetwork)
//	no reply (connection, timeout)          transient
//
// The reply code and its enhanced code ("550 5.1.1") are the failure's Code.
// docs/operations.md has the table with the
// providers' documentation each rule follows.
package smtp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	netmail "net/mail"
	"net/textproto"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	mail "github.com/wneessen/go-mail"
	gosmtp "github.com/wneessen/go-mail/smtp"

	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/email"
)

// Config is how to reach the SMTP server.
type Config struct {
	Host string
	Port int // default 587 (starttls, none) or 465 (tls)
	// TLS is "starttls" (default: required), "tls" (implicit) or "none".
	TLS string
	// TLSConfig overrides the TLS settings (a private CA, say); ServerName is set to Host.
	TLSConfig *tls.Config
	Username  string
	Password  string
	// Auth is "plain" (default with a username), "login" or "cram-md5".
	Auth string
	// Timeout bounds connecting and each command (default 10s).
	Timeout time.Duration
	// Pool is how many connections the sender holds at most, in use or idle and
	// kept for reuse (default 16): a send waits for one when all are busy, so the
	// runner never opens more connections than the server is set up for (and its
	// adaptive concurrency sees the wait as latency).
	Pool int
	// ThrottleWait is when to retry after a throttling or authentication reply
	// (default 1 minute).
	ThrottleWait time.Duration
	// DSN asks a server that offers DSN (RFC 3461) for delivery status reports on
	// these outcomes, comma-separated: success, failure, delay ("": the server's
	// default, failures only), with the headers returned (RET=HDRS) so that herald
	// mail-report finds the signed Message-ID.
	DSN string
	// HELO is the name this client gives in EHLO (default: the machine's host name).
	// Relays may refuse, and spam filters score, a name that is not a fully qualified
	// domain, such as a container's: set the runner host's public name. A domain name
	// or an address literal ([192.0.2.1]).
	HELO     string
	Defaults email.Defaults
}

// heloName is a name EHLO may give (RFC 5321 §4.1.1.1): a domain, or an address
// literal.
var heloName = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\]|\[IPv6:[0-9A-Fa-f:.]+\])$`)

// Sender sends e-mail over SMTP. It is safe for concurrent use.
type Sender struct {
	cfg    Config
	client *mail.Client
	idle   chan *gosmtp.Client
	slots  chan struct{} // one per connection the sender may hold (Pool)
	from   string        // the envelope sender Check names ("" when none)
	dsn    string        // the NOTIFY of every RCPT when the server offers DSN ("": none asked)
}

// New checks cfg and returns a Sender; it does not connect yet.
func New(cfg Config) (*Sender, error) {
	if cfg.Host == "" {
		return nil, errors.New("smtp: no host")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Pool <= 0 {
		cfg.Pool = 16
	}
	if cfg.ThrottleWait == 0 {
		cfg.ThrottleWait = time.Minute
	}
	opts := []mail.Option{mail.WithTimeout(cfg.Timeout)}
	if cfg.HELO != "" {
		if len(cfg.HELO) > 255 || !heloName.MatchString(cfg.HELO) {
			return nil, fmt.Errorf("smtp: HELO %q is not a domain name or an address literal", cfg.HELO)
		}
		opts = append(opts, mail.WithHELO(cfg.HELO))
	}
	tlsConf := &tls.Config{ServerName: cfg.Host, MinVersion: tls.VersionTLS12}
	if cfg.TLSConfig != nil {
		tlsConf = cfg.TLSConfig.Clone()
		tlsConf.ServerName = cfg.Host
	}
	switch cfg.TLS {
	case "", "starttls":
		if cfg.Port == 0 {
			cfg.Port = 587
		}
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory), mail.WithTLSConfig(tlsConf))
	case "tls":
		if cfg.Port == 0 {
			cfg.Port = 465
		}
		opts = append(opts, mail.WithSSL(), mail.WithTLSConfig(tlsConf))
	case "none":
		if cfg.Port == 0 {
			cfg.Port = 587
		}
		opts = append(opts, mail.WithTLSPolicy(mail.NoTLS))
	default:
		return nil, fmt.Errorf("smtp: TLS mode %q: want starttls, tls or none", cfg.TLS)
	}
	opts = append(opts, mail.WithPort(cfg.Port))
	var notify []string // RFC 3461 NOTIFY keywords
	if cfg.DSN != "" {
		for _, o := range strings.Split(cfg.DSN, ",") {
			n := strings.ToUpper(strings.TrimSpace(o))
			if n != "SUCCESS" && n != "FAILURE" && n != "DELAY" || slices.Contains(notify, n) {
				return nil, fmt.Errorf("smtp: DSN %q: want a list of success, failure and delay, each once", cfg.DSN)
			}
			notify = append(notify, n)
		}
	}
	if cfg.Username != "" {
		auth := map[string]mail.SMTPAuthType{"": mail.SMTPAuthPlain, "plain": mail.SMTPAuthPlain,
			"login": mail.SMTPAuthLogin, "cram-md5": mail.SMTPAuthCramMD5}[strings.ToLower(cfg.Auth)]
		if auth == "" {
			return nil, fmt.Errorf("smtp: AUTH mechanism %q: want plain, login or cram-md5", cfg.Auth)
		}
		opts = append(opts, mail.WithSMTPAuth(auth), mail.WithUsername(cfg.Username), mail.WithPassword(cfg.Password))
	}
	var from string // what Check names in MAIL FROM: the return path, else the From
	for _, a := range []struct{ name, value string }{{"default From", cfg.Defaults.From}, {"return path", cfg.Defaults.ReturnPath}} {
		if a.value == "" {
			continue
		}
		addr, err := netmail.ParseAddress(a.value)
		if err != nil {
			return nil, fmt.Errorf("smtp: %s %q: %w", a.name, a.value, err)
		}
		from = addr.Address
	}
	c, err := mail.NewClient(cfg.Host, opts...)
	if err != nil {
		return nil, fmt.Errorf("smtp: %w", err)
	}
	return &Sender{cfg: cfg, client: c, idle: make(chan *gosmtp.Client, cfg.Pool), slots: make(chan struct{}, cfg.Pool), from: from,
		dsn: strings.Join(notify, ",")}, nil
}

// Send delivers one message. The provider id it reports is the Message-ID.
func (s *Sender) Send(ctx context.Context, m sender.Message) (sender.Result, error) {
	e, err := email.Build(ctx, m, s.cfg.Defaults)
	if err != nil {
		return sender.Result{}, err
	}
	msg, err := e.MIME()
	if err != nil {
		return sender.Result{}, err
	}
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return sender.Result{}, sender.Transient(ctx.Err())
	}
	defer func() { <-s.slots }()
	var res sender.Result
	var refused []*replyError
	refused, err = s.transmit(ctx, msg, m.Recipient, e.MessageID)
	if err == nil && len(refused) > 0 {
		// Only copies, for good: the To and the other copies got the message without
		// them (a bad cc must not fail, nor suppress, the To), each recorded with its
		// own reply.
		var names, replies []string
		for _, r := range refused {
			names, replies = append(names, r.address), append(replies, r.Error())
			res.RefusedCopies = append(res.RefusedCopies, sender.Refusal{Address: r.address, Code: r.code()})
		}
		res.Warning = fmt.Sprintf("copies refused for good and left out: %s (%s)", strings.Join(names, ", "), strings.Join(replies, "; "))
	}
	if err != nil {
		f := s.classify(err)
		if refused, atMailFrom := refusesSender(err, e.FromAddress); refused && sender.Classify(f).Class == sender.ClassPermanent {
			f = e.SenderRefused(f, atMailFrom)
		}
		return sender.Result{}, f
	}
	res.ProviderMessageID = e.MessageID
	return res, nil
}

// transmit sends msg on a pooled connection (transact) and returns the copies
// the server refused for good, or the failure; the connection goes back to the pool,
// or is closed when the session is in doubt. A message the server took (250 after the
// data) is delivered whatever comes after it. On a reused connection that the server
// had closed (no reply, or 421, before any of the message was sent) it is sent once
// more on a fresh one.
func (s *Sender) transmit(ctx context.Context, msg *mail.Msg, to, messageID string) ([]*replyError, error) {
	conn, reused, err := s.conn(ctx)
	if err != nil {
		return nil, err
	}
	t := s.transact(conn, msg, to, messageID)
	if t.err != nil && reused && !t.dataSent && sessionGone(t.err) {
		_ = s.client.CloseWithSMTPClient(conn)
		if conn, err = s.dial(ctx); err != nil {
			return nil, err
		}
		t = s.transact(conn, msg, to, messageID)
	}
	switch {
	case t.reusable:
		s.release(conn)
	case t.hangUp:
		_ = conn.Close()
	default:
		_ = s.client.CloseWithSMTPClient(conn)
	}
	return t.refused, t.err
}

// transaction is how one SMTP transaction ended: its failure (nil: the message was
// taken), the copies refused for good, whether any of the message's data was sent,
// whether the connection may carry the next one, and whether it must be closed without
// a QUIT (the server waits for data: a QUIT would be read as the message).
type transaction struct {
	err      error
	refused  []*replyError
	dataSent bool
	reusable bool
	hangUp   bool
}

// transact sends msg in one transaction: MAIL, a RCPT per recipient and DATA, written
// together when the server offers PIPELINING (RFC 2920: one round trip) and one by one
// otherwise, then the data and its end (a second). No NOOP before and no RSET after:
// a completed transaction lets the next MAIL begin (RFC 5321 §4.1.1.1). The data is
// sent only when the To (to) is accepted and no copy is refused for now (4yz, the
// message is tried again whole); copies refused for good (5yz) are left out and
// returned. A transaction ended before the data is reset (RSET); one ended after the
// server said 354 can only be ended by closing the connection. With delivery reports
// asked for (Config.DSN), the envelope id (ENVID) is the Message-ID, so a report that
// returns no headers still names the message.
func (s *Sender) transact(c *gosmtp.Client, msg *mail.Msg, to, messageID string) transaction {
	from, err := msg.GetSender(false)
	if err != nil {
		return transaction{err: sender.Permanent(fmt.Errorf("from: %w", err)), reusable: true}
	}
	rcpts, err := msg.GetRecipients()
	if err != nil {
		return transaction{err: sender.Permanent(fmt.Errorf("recipients: %w", err)), reusable: true}
	}
	if err := c.UpdateDeadline(s.cfg.Timeout); err != nil {
		return transaction{err: err}
	}
	var mailParams, rcptParams string
	if ok, _ := c.Extension("8BITMIME"); ok {
		mailParams += " BODY=8BITMIME"
	}
	if ok, _ := c.Extension("DSN"); ok && s.dsn != "" {
		mailParams += " RET=HDRS"
		if envid := xtext(strings.Trim(messageID, "<>")); envid != "" && len(envid) <= 100 { // RFC 3461 §4.4
			mailParams += " ENVID=" + envid
		}
		rcptParams = " NOTIFY=" + s.dsn
	}
	cmds := []string{"MAIL FROM:" + from + mailParams} // go-mail's addresses come in <>
	for i, r := range rcpts {
		cmds = append(cmds, "RCPT TO:"+r+rcptParams)
		rcpts[i] = strings.Trim(r, "<>")
	}
	cmds = append(cmds, "DATA")
	pipelining, _ := c.Extension("PIPELINING")
	text := c.Text
	write := func(lines ...string) error {
		for _, l := range lines {
			if _, err := text.W.WriteString(l + "\r\n"); err != nil {
				return err
			}
		}
		return text.W.Flush()
	}
	// read is the reply to cmds[i]: nil when it is the one that command wants (MAIL
	// 250, RCPT 250 or 251, DATA 354).
	read := func(i int) (*replyError, error) {
		want, stage, address := 250, "MAIL", ""
		switch {
		case i == len(cmds)-1:
			want, stage = 354, "DATA"
		case i > 0:
			want, stage, address = 25, "RCPT", rcpts[i-1]
		}
		_, _, err := text.ReadResponse(want)
		var te *textproto.Error
		switch {
		case errors.As(err, &te):
			return &replyError{stage: stage, address: address, reply: te}, nil
		case err != nil:
			return nil, err // no reply: the connection
		}
		return nil, nil
	}
	if pipelining {
		if err := write(cmds...); err != nil {
			return transaction{err: err}
		}
	}
	replies := make([]*replyError, len(cmds))
	for i := range cmds {
		if !pipelining {
			if i == len(cmds)-1 && abandon(replies[:i], rcpts, to) != nil {
				break // nothing to send: the DATA is not asked for
			}
			if err := write(cmds[i]); err != nil {
				return transaction{err: err}
			}
		}
		r, err := read(i)
		if err != nil {
			return transaction{err: err}
		}
		replies[i] = r
		if !pipelining && i == 0 && r != nil {
			break // MAIL refused: no recipient to name
		}
	}
	inData := pipelining && replies[len(cmds)-1] == nil
	if stop := abandon(replies, rcpts, to); stop != nil {
		if inData { // the server waits for the data: only closing ends it unsent
			return transaction{err: stop, hangUp: true}
		}
		return transaction{err: stop, reusable: s.reset(text) == nil}
	}
	if dataRefused := replies[len(cmds)-1]; dataRefused != nil {
		return transaction{err: dataRefused, reusable: s.reset(text) == nil}
	}
	var refused []*replyError
	for _, r := range replies[1 : len(cmds)-1] {
		if r != nil {
			refused = append(refused, r)
		}
	}
	w := text.DotWriter()
	if _, err := msg.WriteTo(w); err != nil {
		return transaction{err: err, dataSent: true}
	}
	if err := w.Close(); err != nil {
		return transaction{err: err, dataSent: true}
	}
	if _, _, err := text.ReadResponse(250); err != nil {
		var te *textproto.Error
		if errors.As(err, &te) { // the data refused (552 too large, 554 spam): the session goes on
			return transaction{err: &replyError{stage: "data", reply: te}, dataSent: true, reusable: true}
		}
		return transaction{err: &sender.Sent{Err: err}, dataSent: true} // no reply: taken or not, nobody knows
	}
	return transaction{refused: refused, dataSent: true, reusable: true}
}

// xtext encodes s as RFC 3461 §4 does: "+", "=" and what is not printable ASCII as
// "+" and two hexadecimal digits.
func xtext(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < '!' || c > '~' || c == '+' || c == '=' {
			fmt.Fprintf(&b, "+%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// abandon is why the transaction must end before its data, from the replies so far
// (nil where a command got what it wanted): MAIL refused; the To refused (its own
// reply decides the message's failure); a copy refused for now (the message is tried
// again later, whole). nil when the data may go: copies refused for good are left out.
func abandon(replies []*replyError, rcpts []string, to string) error {
	if len(replies) > 0 && replies[0] != nil {
		return replies[0]
	}
	var forNow error
	for i, r := range replies {
		if i == 0 || i > len(rcpts) || r == nil {
			continue
		}
		if strings.EqualFold(r.address, to) {
			return r
		}
		if r.reply.Code < 500 && forNow == nil {
			forNow = fmt.Errorf("copy %s refused for now: %w", r.address, r)
		}
	}
	return forNow
}

// reset ends a transaction before its data (RSET), keeping the session. Written raw
// like the transaction's commands: textproto's Cmd would take a turn of its pipeline
// sequencer that go-mail's next command (QUIT, Check's MAIL) would wait for forever.
func (s *Sender) reset(text *textproto.Conn) error {
	if err := text.PrintfLine("RSET"); err != nil {
		return err
	}
	_, _, err := text.ReadResponse(250)
	return err
}

// replyError is a server's refusal of one command of a transaction: MAIL, RCPT (of
// address), DATA, or the data itself ("data", the reply to its end).
type replyError struct {
	stage   string
	address string
	reply   *textproto.Error
}

func (e *replyError) Error() string {
	if e.address != "" {
		return fmt.Sprintf("SMTP %s <%s>: %d %s", e.stage, e.address, e.reply.Code, e.reply.Msg)
	}
	return fmt.Sprintf("SMTP %s: %d %s", e.stage, e.reply.Code, e.reply.Msg)
}

func (e *replyError) Unwrap() error { return e.reply }

// code is the reply and its enhanced code, "550 5.1.1".
func (e *replyError) code() string {
	c := strconv.Itoa(e.reply.Code)
	if enhanced := enhancedCode.FindString(e.reply.Msg); enhanced != "" {
		c += " " + enhanced
	}
	return c
}

// sessionGone reports whether err says the server ended the session rather than
// answered the message: no reply at all, or 421 (RFC 5321 §3.8: the server closes
// the connection).
func sessionGone(err error) bool {
	var re *replyError
	return !errors.As(err, &re) || re.reply.Code == 421
}

// Check connects, starts TLS and authenticates as configured and, when the channel
// has a return path or a default From, names it in MAIL FROM and resets, sending nothing: a server
// that refuses that sender there (5yz) is a configuration failure, so that a probe
// does not resume a channel paused for its From (sender.Checker).
func (s *Sender) Check(ctx context.Context) error {
	c, err := s.dial(ctx)
	if err != nil {
		return s.classify(err)
	}
	defer func() { _ = s.client.CloseWithSMTPClient(c) }()
	if s.from == "" {
		return nil
	}
	if err := c.Mail(s.from); err != nil {
		f := s.classify(err)
		if sender.Classify(f).Class == sender.ClassPermanent {
			f = email.Email{FromAddress: s.from, ReturnPath: s.cfg.Defaults.ReturnPath}.SenderRefused(f, true)
		}
		return f
	}
	return c.Reset()
}

// conn takes an idle connection, or dials a new one.
func (s *Sender) conn(ctx context.Context) (*gosmtp.Client, bool, error) {
	select {
	case c := <-s.idle:
		return c, true, nil
	default:
	}
	c, err := s.dial(ctx)
	return c, false, err
}

func (s *Sender) dial(ctx context.Context) (*gosmtp.Client, error) {
	return s.client.DialToSMTPClientWithContext(ctx)
}

// release keeps a healthy connection for the next message, or closes it when the
// pool is full.
func (s *Sender) release(c *gosmtp.Client) {
	select {
	case s.idle <- c:
	default:
		_ = s.client.CloseWithSMTPClient(c)
	}
}

// Close closes the idle connections.
func (s *Sender) Close() error {
	for {
		select {
		case c := <-s.idle:
			_ = s.client.CloseWithSMTPClient(c)
		default:
			return nil
		}
	}
}

// enhancedCode is an RFC 3463 enhanced status code at the start of a reply's text.
var enhancedCode = regexp.MustCompile(`^[245]\.\d{1,3}\.\d{1,3}`)

// reply reads an SMTP outcome: the reply code (0 when the server gave none), its
// enhanced code ("5.1.1" or ""), and whether it answered MAIL FROM.
func reply(err error) (code int, enhanced string, mailFrom bool) {
	var re *replyError
	var te *textproto.Error // AUTH, connection-time and Check's MAIL FROM replies
	if errors.As(err, &re) {
		return re.reply.Code, enhancedCode.FindString(re.reply.Msg), re.stage == "MAIL"
	}
	if errors.As(err, &te) {
		return te.Code, enhancedCode.FindString(te.Msg), false
	}
	return 0, "", false
}

// refusesSender reports whether err refuses the sender identity rather than the
// message or a recipient, and whether it answered MAIL FROM (the envelope sender): a
// 5yz reply to MAIL FROM (not 552, the message's size), the sender-address codes 5.1.7
// and 5.1.8, Microsoft 365's 5.7.60 (SendAsDenied), or Amazon SES's "Email address is
// not verified" naming from (SES names unverified recipients the same way in its
// sandbox).
func refusesSender(err error, from string) (refused, atMailFrom bool) {
	code, enhanced, mailFrom := reply(err)
	if code < 500 {
		return false, false
	}
	text := strings.ToLower(err.Error())
	if mailFrom && code != 552 && enhanced != "5.3.4" {
		return true, true
	}
	return enhanced == "5.1.7" || enhanced == "5.1.8" || enhanced == "5.7.60" || strings.Contains(text, "sendasdenied") ||
		strings.Contains(text, "email address is not verified") && from != "" && strings.Contains(text, strings.ToLower(from)), false
}

// accountRefused reports whether a 5yz reply refuses the sending account or its IP,
// whatever the message: SES's paused or suspended sending, Microsoft 365's tenant and
// IP blocks (5.7.501 spam abuse, 5.7.511 banned sender, 5.7.705 tenant over its
// threshold, 5.7.708 IP not accepted, 5.7.750 unregistered domains), a relay that
// takes no mail from this client (SendGrid "Unauthenticated senders not allowed",
// Google's "Mail relay denied" and "Invalid credentials for relay"). Every message
// would get the same answer: the channel pauses instead of dead-lettering its backlog.
func accountRefused(enhanced, text string) bool {
	switch enhanced {
	case "5.7.501", "5.7.511", "5.7.705", "5.7.708", "5.7.750":
		return true
	}
	for _, s := range []string{"sending paused for this", "sending suspended for this account",
		"unauthenticated senders not allowed", "mail relay denied", "invalid credentials for relay"} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// authReply reports whether code is an authentication reply (530, 534, 535, 538).
func authReply(code int) bool { return code == 530 || code == 534 || code == 535 || code == 538 }

// classify maps an SMTP outcome to a failure class (see the package doc); the reply
// code and its enhanced code, when the server gave them ("550 5.1.1"), are the
// failure's Code.
func (s *Sender) classify(err error) error {
	code, enhanced, _ := reply(err)
	text := strings.ToLower(err.Error())
	now := time.Now()
	switch {
	case authReply(code):
		err = sender.Configuration(err, "")
	case enhanced == "5.4.5" || strings.Contains(text, "submissionquotaexceeded") ||
		strings.Contains(text, "sending limit exceeded") || strings.Contains(text, "daily user sending quota") ||
		strings.Contains(text, "daily message quota exceeded") || strings.Contains(text, "maximum credits exceeded"):
		err = sender.Quota(err)
	case (code == 421 || code == 450 || code == 451 || code == 452 || code == 454) && enhanced != "4.5.3" &&
		!strings.Contains(text, "too many recipients") &&
		(strings.HasPrefix(enhanced, "4.7.") || enhanced == "4.2.1" || strings.Contains(text, "rate") ||
			strings.Contains(text, "throttl") || strings.Contains(text, "too many") || strings.Contains(text, "too quickly")):
		err = sender.RateLimited(err, now.Add(s.cfg.ThrottleWait))
	case code >= 500 && accountRefused(enhanced, text):
		err = sender.Configuration(err, "")
	case code >= 500:
		err = sender.Permanent(err)
	case code == 0:
		err = sender.FromNetwork(err)
	default: // 421: the server is not available (closing the connection)
		err = &sender.Failure{Class: sender.ClassTransient, Unavailable: code == 421, Err: err}
	}
	if code > 0 { // "550 5.1.1": herald.fail reads the enhanced code (a bad mailbox is suppressed)
		c := strconv.Itoa(code)
		if enhanced != "" {
			c += " " + enhanced
		}
		err = sender.WithCode(err, c)
	}
	return err
}
