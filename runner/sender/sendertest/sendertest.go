// Package sendertest holds the fakes the senders are tested against: an in-process
// SMTP server (STARTTLS, implicit TLS, AUTH) and HTTP servers that check requests the
// way SendGrid's and Twilio's APIs document them and answer in their shapes. The
// senders' own tests and the end-to-end tests of herald run share them.
package sendertest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	smtpsender "github.com/herald/herald/runner/sender/smtp"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/herald/herald/runner/idtag"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/email"
)

// Received is one message as the SMTP server got it.
type Received struct {
	From string
	To   []string
	Data string
}

// SMTPServer is an in-process SMTP server speaking STARTTLS and AUTH PLAIN on
// loopback (TLS required before AUTH). Recipients choose its answers: busy@… 451 4.3.0, slow-down@… 451 4.7.1
// (throttling), unknown@… 550 5.1.1, drop@… the connection is cut during DATA.
type SMTPServer struct {
	Addr     string
	CAFile   string // PEM of the server certificate, for the client's trust
	TLS      *tls.Config
	User     string
	Password string

	mu      sync.Mutex
	replies map[string]*smtp.SMTPError // by recipient local part (Reply)
	senders map[string]senderReply     // by sender address (RefuseSender)
	msgs    []Received
	rcpts   []string        // every RCPT TO, accepted or not (Rcpts)
	mails   []string        // every MAIL FROM, accepted or not (Mails)
	conns   map[string]bool // client addresses: one per connection (STARTTLS starts a new session, not a new connection)
	server  *smtp.Server
}

// senderReply is how the server refuses a sender: at MAIL FROM or after DATA.
type senderReply struct {
	err    *smtp.SMTPError
	atData bool
}

// smtpError is an SMTP reply (code, enhanced code such as "4.7.0" or "", text).
func smtpError(code int, enhanced, text string) *smtp.SMTPError {
	e := &smtp.SMTPError{Code: code, EnhancedCode: smtp.NoEnhancedCode, Message: text}
	if enhanced != "" {
		var c smtp.EnhancedCode
		fmt.Sscanf(enhanced, "%d.%d.%d", &c[0], &c[1], &c[2])
		e.EnhancedCode = c
	}
	return e
}

// Reply makes the server answer RCPT TO for the local part with the given reply
// (code, enhanced code such as "4.7.0" or "", text), as a real provider would.
func (s *SMTPServer) Reply(localPart string, code int, enhanced, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replies == nil {
		s.replies = map[string]*smtp.SMTPError{}
	}
	s.replies[localPart] = smtpError(code, enhanced, text)
}

// Accept makes the server accept RCPT TO for the local part again (undoes Reply).
func (s *SMTPServer) Accept(localPart string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.replies, localPart)
}

// RefuseSender makes the server refuse the sender address with the given reply, at
// MAIL FROM (a relay that checks who may send) or, atData, after the message's data
// (as Microsoft 365 and Amazon SES do). Addresses compare in any letter case.
func (s *SMTPServer) RefuseSender(from string, atData bool, code int, enhanced, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.senders == nil {
		s.senders = map[string]senderReply{}
	}
	s.senders[strings.ToLower(from)] = senderReply{err: smtpError(code, enhanced, text), atData: atData}
}

// Mails returns every sender a client has named in MAIL FROM so far, refused ones
// too, in order.
func (s *SMTPServer) Mails() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.mails...)
}

// Messages returns what the server has received so far.
func (s *SMTPServer) Messages() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.msgs...)
}

// Rcpts returns every recipient a client has named in RCPT TO so far, refused ones
// too, in order.
func (s *SMTPServer) Rcpts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rcpts...)
}

// ConnCount returns how many connections the server has accepted.
func (s *SMTPServer) ConnCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// selfSigned makes a certificate for 127.0.0.1 and localhost and writes its PEM.
func selfSigned(t testing.TB) (tls.Certificate, string) {
	t.Helper()
	certPEM, keyPEM := newCert(t)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return cert, file
}

// CertFiles writes a fresh self-signed certificate for 127.0.0.1 and localhost, and
// its key, as PEM files (for a TLS server started by a test, such as Mailpit); the
// certificate is also the CA to trust.
func CertFiles(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM := newCert(t)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func newCert(t testing.TB) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := SelfSignedPEM()
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// SelfSignedPEM makes a fresh self-signed certificate for 127.0.0.1 and localhost
// (its own CA) and its key, as PEM: for the test servers here and the bench's fake
// provider.
func SelfSignedPEM() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "herald test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// StartSMTP starts the server; withTLS false gives a plain relay with no AUTH.
func StartSMTP(t testing.TB, withTLS bool) *SMTPServer {
	return StartSMTPMode(t, withTLS, false)
}

// StartSMTPMode starts the server; implicit puts TLS on the connection from the
// first byte (SMTPS) instead of offering STARTTLS.
func StartSMTPMode(t testing.TB, withTLS, implicit bool) *SMTPServer {
	t.Helper()
	s := &SMTPServer{User: "herald", Password: "s3cret-pw", conns: map[string]bool{}}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		s.mu.Lock()
		s.conns[c.Conn().RemoteAddr().String()] = true
		s.mu.Unlock()
		return &smtpSession{srv: s, conn: c, needAuth: withTLS}, nil
	}))
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	if withTLS {
		cert, ca := selfSigned(t)
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		s.CAFile, s.TLS = ca, srv.TLSConfig
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String()
	if implicit {
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	s.server = srv
	go srv.Serve(ln)
	t.Cleanup(s.Stop)
	return s
}

// Stop takes the server down as an outage does: its connections are cut and new
// ones refused.
func (s *SMTPServer) Stop() { s.server.Close() }

type smtpSession struct {
	srv      *SMTPServer
	conn     *smtp.Conn
	needAuth bool
	authed   bool
	from     string
	to       []string
}

func (s *smtpSession) AuthMechanisms() []string {
	if !s.needAuth {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *smtpSession) Auth(mech string) (sasl.Server, error) {
	check := func(user, pass string) error {
		if user != s.srv.User || pass != s.srv.Password {
			return smtp.ErrAuthFailed // 535 5.7.8, as real servers answer
		}
		s.authed = true
		return nil
	}
	return sasl.NewPlainServer(func(_, user, pass string) error { return check(user, pass) }), nil
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if s.needAuth {
		if _, isTLS := s.conn.TLSConnectionState(); !isTLS || !s.authed {
			return smtp.ErrAuthRequired
		}
	}
	s.srv.mu.Lock()
	refusal, refused := s.srv.senders[strings.ToLower(from)]
	s.srv.mails = append(s.srv.mails, from)
	s.srv.mu.Unlock()
	if refused && !refusal.atData {
		return refusal.err
	}
	s.from = from
	return nil
}

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	local := strings.SplitN(to, "@", 2)[0]
	s.srv.mu.Lock()
	reply := s.srv.replies[local]
	s.srv.rcpts = append(s.srv.rcpts, to)
	s.srv.mu.Unlock()
	if reply != nil {
		return reply
	}
	switch local {
	case "busy":
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "mailbox busy, try again later"}
	case "slow-down":
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: "rate limit exceeded, slow down"}
	case "unknown":
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	s.to = append(s.to, to)
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	for _, to := range s.to {
		if strings.HasPrefix(to, "drop@") {
			s.conn.Conn().Close()
			return errors.New("dropped")
		}
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.srv.mu.Lock()
	if refusal, refused := s.srv.senders[strings.ToLower(s.from)]; refused {
		s.srv.mu.Unlock()
		return refusal.err
	}
	s.srv.msgs = append(s.srv.msgs, Received{From: s.from, To: s.to, Data: string(b)})
	s.srv.mu.Unlock()
	return nil
}

func (s *smtpSession) Reset()        { s.from, s.to = "", nil }
func (s *smtpSession) Logout() error { return nil }

// EmailMessage is an e-mail with a subject, both body parts and a custom header.
func EmailMessage(id int64, to string) sender.Message {
	return sender.Message{ID: id, Channel: "email", Recipient: to, Attempt: 1,
		Payload: json.RawMessage(`{"subject":"Your receipt","text":"Thanks, Ana.","html":"<p>Thanks, <b>Ana</b>.</p>","headers":{"X-Campaign":"spring"}}`)}
}

// WantClass fails the test unless err is a failure of the given class.
func WantClass(t testing.TB, err error, class sender.Class) *sender.Failure {
	t.Helper()
	if err == nil {
		t.Fatalf("want a %s failure, got success", class)
	}
	f := sender.Classify(err)
	if f.Class != class {
		t.Fatalf("want %s, got %s: %v", class, f.Class, err)
	}
	return f
}

// SMTPConfig is a sender configuration for the server, trusting its certificate.
func SMTPConfig(t testing.TB, s *SMTPServer) smtpsender.Config {
	t.Helper()
	host, port, _ := net.SplitHostPort(s.Addr)
	p, _ := strconv.Atoi(port)
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return smtpsender.Config{Host: host, Port: p, TLSConfig: &tls.Config{RootCAs: pool}, Username: s.User, Password: s.Password,
		Timeout: 5 * time.Second, Defaults: email.Defaults{MessageIDKey: idtag.StaticKey(MessageIDKey), From: "Herald <noreply@example.com>", ReplyTo: "support@example.com"}}
}

// MessageIDKey is the key SMTPConfig's sender signs Message-IDs with.
var MessageIDKey = []byte("a Message-ID key")

// FakeSendGrid checks each request as the v3 Mail Send API documents it and answers
// with SendGrid's response shapes; recipients choose the answer. The verified sender
// identities are noreply@example.com (as "Herald") and the senders given: any other
// from gets SendGrid's 403. GET /v3/scopes answers for the key SG.test-key (with
// mail.send) and SG.read-only (without); any other key gets 401.
func FakeSendGrid(t testing.TB, senders ...string) *httptest.Server {
	verified := map[string]bool{"noreply@example.com": true}
	for _, s := range senders {
		verified[s] = true
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" && r.URL.Path == "/v3/scopes" {
			switch r.Header.Get("Authorization") {
			case "Bearer SG.test-key":
				io.WriteString(w, `{"scopes":["mail.send","alerts.read"]}`)
			case "Bearer SG.read-only":
				io.WriteString(w, `{"scopes":["alerts.read"]}`)
			default:
				w.WriteHeader(401)
				io.WriteString(w, `{"errors":[{"field":null,"message":"authorization required"}]}`)
			}
			return
		}
		if r.Method != "POST" || r.URL.Path != "/v3/mail/send" || r.Header.Get("Authorization") != "Bearer SG.test-key" ||
			r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("sendgrid: bad request %s %s auth %q type %q", r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"))
			w.WriteHeader(400)
			return
		}
		var req struct {
			Personalizations []struct {
				To  []struct{ Email string } `json:"to"`
				Cc  []struct{ Email string } `json:"cc"`
				Bcc []struct{ Email string } `json:"bcc"`
			} `json:"personalizations"`
			From       struct{ Email, Name string }   `json:"from"`
			ReplyTo    *struct{ Email string }        `json:"reply_to"`
			Subject    string                         `json:"subject"`
			Content    []struct{ Type, Value string } `json:"content"`
			Headers    map[string]string              `json:"headers"`
			CustomArgs map[string]string              `json:"custom_args"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Personalizations) != 1 || len(req.Personalizations[0].To) != 1 {
			t.Errorf("sendgrid: body: %v %+v", err, req)
			w.WriteHeader(400)
			return
		}
		if !verified[req.From.Email] { // SendGrid's answer for a from without sender verification
			w.WriteHeader(403)
			io.WriteString(w, `{"errors":[{"message":"The from address does not match a verified Sender Identity. Mail cannot be sent until this error is resolved. Visit https://sendgrid.com/docs/for-developers/sending-email/sender-identity/ to see the Sender Identity requirements","field":"from","help":null}]}`)
			return
		}
		named := map[string]bool{} // SendGrid's 400 for an address named twice, in any letter case
		p := req.Personalizations[0]
		for _, a := range append(append(append([]struct{ Email string }(nil), p.To...), p.Cc...), p.Bcc...) {
			if named[strings.ToLower(a.Email)] {
				w.WriteHeader(400)
				io.WriteString(w, `{"errors":[{"message":"Each email address in the personalization block should be unique between to, cc, and bcc. We found the first duplicate instance of [`+a.Email+`] in the personalizations.0.cc field.","field":"personalizations.0","help":null}]}`)
				return
			}
			named[strings.ToLower(a.Email)] = true
		}
		to := p.To[0].Email
		if req.From.Email == "noreply@example.com" && req.From.Name != "Herald" || req.Subject != "Your receipt" ||
			len(req.Content) != 2 || req.Content[0].Type != "text/plain" || req.Content[1].Type != "text/html" ||
			req.CustomArgs["herald_id"] == "" || !strings.HasPrefix(req.Headers["Message-ID"], "<herald-") || req.Headers["X-Campaign"] != "spring" {
			t.Errorf("sendgrid: fields: %+v", req)
		}
		switch strings.SplitN(to, "@", 2)[0] {
		case "copied": // answers 202 only when cc and bcc arrived as personalizations
			p := req.Personalizations[0]
			if len(p.Cc) != 1 || p.Cc[0].Email != "bo@example.net" || len(p.Bcc) != 1 || p.Bcc[0].Email != "audit@example.net" {
				w.WriteHeader(400)
				io.WriteString(w, `{"errors":[{"message":"cc/bcc missing","field":"personalizations.0.cc"}]}`)
				return
			}
			w.Header().Set("X-Message-Id", "sg-copied")
			w.WriteHeader(202)
		case "limited":
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(429)
			io.WriteString(w, `{"errors":[{"field":null,"message":"too many requests"}]}`)
		case "down":
			w.WriteHeader(500)
			io.WriteString(w, `{"errors":[{"field":null,"message":"internal error"}]}`)
		case "forbidden": // a key without the mail.send scope
			w.WriteHeader(403)
			io.WriteString(w, `{"errors":[{"field":null,"message":"access forbidden"}]}`)
		case "revoked":
			w.WriteHeader(401)
			io.WriteString(w, `{"errors":[{"field":null,"message":"The provided authorization grant is invalid, expired, or revoked","help":null}]}`)
		case "nocredits": // the account's credits are spent (SendGrid answers 401, as to a bad key)
			w.WriteHeader(401)
			io.WriteString(w, `{"errors":[{"field":null,"message":"Maximum credits exceeded","help":null}]}`)
		case "huge":
			w.WriteHeader(413)
			io.WriteString(w, `{"errors":[{"message":"The JSON payload you have included in your request is too large.","field":null}]}`)
		case "bad":
			w.WriteHeader(400)
			io.WriteString(w, `{"errors":[{"message":"Does not contain a valid address.","field":"personalizations.0.to.0.email","help":"http://sendgrid.com/docs/API_Reference/Web_API_v3/Mail/errors.html#message.personalizations.to"}]}`)
		default:
			w.Header().Set("X-Message-Id", "sg-"+req.CustomArgs["herald_id"])
			w.WriteHeader(202)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TwilioRequests records what the Twilio fake received.
type TwilioRequests struct {
	mu    sync.Mutex
	sent  []string // To numbers accepted
	forms []url.Values
}

// Forms returns the forms of the accepted messages, in order.
func (r *TwilioRequests) Forms() []url.Values {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]url.Values(nil), r.forms...)
}

// Sent returns the To numbers the fake accepted, in order.
func (r *TwilioRequests) Sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.sent...)
}

// contentSID is a Twilio Content template's SID, as the Content API defines it.
var contentSID = regexp.MustCompile(`^HX[0-9a-fA-F]{32}$`)

// FakeTwilio checks each request as the Messages API documents it (path, Basic auth
// with the account SID AC0123 and token tw-token or the API key SK0123 and secret
// sk-secret, form encoding, fields) and answers with Twilio's response shapes. GET of
// the account answers status active (error 20003 with other credentials); the
// account's numbers (IncomingPhoneNumbers) are +15005550006 alone, the From of every
// message that names no messaging service (MG…), "whatsapp:"-prefixed when the To
// is (else error 63007). A Content template (ContentSid HX…, ContentVariables a
// JSON object) may stand for Body (errors 21654, 21655, 21656). A ValidityPeriod
// outside 1..36000 seconds gets error 90007.
func FakeTwilio(t testing.TB) (*httptest.Server, *TwilioRequests) {
	rec := &TwilioRequests{}
	instance := mrand.Uint32() // message SIDs are unique across fakes, as Twilio's are across accounts
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		authed := ok && ((user == "AC0123" && pass == "tw-token") || (user == "SK0123" && pass == "sk-secret"))
		if r.Method == "GET" && r.URL.Path == "/2010-04-01/Accounts/AC0123.json" {
			w.Header().Set("Content-Type", "application/json")
			if !authed {
				w.WriteHeader(401)
				io.WriteString(w, `{"code": 20003, "message": "Authenticate", "more_info": "https://www.twilio.com/docs/errors/20003", "status": 401}`)
				return
			}
			io.WriteString(w, `{"sid": "AC0123", "friendly_name": "herald test", "status": "active", "type": "Full"}`)
			return
		}
		if r.Method == "GET" && r.URL.Path == "/2010-04-01/Accounts/AC0123/IncomingPhoneNumbers.json" && authed {
			// The account owns +15005550006 (Twilio's magic test number) only.
			w.Header().Set("Content-Type", "application/json")
			if n := r.URL.Query().Get("PhoneNumber"); n == "+15005550006" {
				fmt.Fprintf(w, `{"incoming_phone_numbers": [{"sid": "PN0123", "phone_number": %q, "capabilities": {"sms": true}}], "page": 0}`, n)
			} else {
				io.WriteString(w, `{"incoming_phone_numbers": [], "page": 0}`)
			}
			return
		}
		if r.Method != "POST" || r.URL.Path != "/2010-04-01/Accounts/AC0123/Messages.json" || !authed ||
			r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			t.Errorf("twilio: bad request %s %s auth %v %q type %q", r.Method, r.URL.Path, ok, user, r.Header.Get("Content-Type"))
			w.WriteHeader(401)
			return
		}
		err := r.ParseForm()
		from := r.PostForm.Get("From")
		sender := strings.TrimPrefix(from, "whatsapp:") == "+15005550006" || strings.HasPrefix(r.PostForm.Get("MessagingServiceSid"), "MG")
		content := r.PostForm.Get("ContentSid")
		if err != nil || !sender ||
			(r.PostForm.Get("Body") == "" && r.PostForm.Get("MediaUrl") == "" && content == "") {
			t.Errorf("twilio: form %v %v", r.PostForm, err)
		}
		to, whatsapp := strings.CutPrefix(r.PostForm.Get("To"), "whatsapp:")
		w.Header().Set("Content-Type", "application/json")
		twilioError := func(status, code int, message string) {
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"code": %d, "message": %q, "more_info": "https://www.twilio.com/docs/errors/%d", "status": %d}`, code, message, code, status)
		}
		var vars map[string]string
		switch {
		case from != "" && whatsapp != strings.HasPrefix(from, "whatsapp:"): // one address WhatsApp, the other not
			twilioError(400, 63007, "Twilio could not find a Channel with the specified From address")
			return
		case r.PostForm.Has("ContentVariables") && content == "":
			twilioError(400, 21654, "ContentSid Required")
			return
		case content != "" && !contentSID.MatchString(content):
			twilioError(400, 21655, "The ContentSid is Invalid")
			return
		case r.PostForm.Has("ContentVariables") && json.Unmarshal([]byte(r.PostForm.Get("ContentVariables")), &vars) != nil:
			twilioError(400, 21656, "The ContentVariables Parameter is invalid")
			return
		}
		if cb := r.PostForm.Get("StatusCallback"); cb != "" {
			if u, err := url.Parse(cb); err != nil || u.Host == "" || strings.ContainsAny(u.Hostname(), "_") ||
				strings.HasSuffix(u.Hostname(), ".invalid") { // .invalid: a URL Twilio refuses for its own reasons
				w.WriteHeader(400)
				io.WriteString(w, `{"code": 21609, "message": "Invalid 'StatusCallback'", "more_info": "https://www.twilio.com/docs/errors/21609", "status": 400}`)
				return
			}
		}
		if v := r.PostForm.Get("ValidityPeriod"); v != "" {
			if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 36000 {
				w.WriteHeader(400)
				io.WriteString(w, `{"code": 90007, "message": "Invalid validity period value", "more_info": "https://www.twilio.com/docs/errors/90007", "status": 400}`)
				return
			}
		}
		switch to {
		case "+15005550001":
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"code": 21211, "message": "The 'To' number %s is not a valid phone number.", "more_info": "https://www.twilio.com/docs/errors/21211", "status": 400}`, to)
		case "+15005550002":
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(429)
			io.WriteString(w, `{"code": 20429, "message": "Too Many Requests", "more_info": "https://www.twilio.com/docs/errors/20429", "status": 429}`)
		case "+15005550003":
			w.WriteHeader(503)
			io.WriteString(w, `{"code": 20503, "message": "Service Unavailable", "status": 503}`)
		case "+15005550011": // Twilio's documented errors, as the API answers them
			w.WriteHeader(400)
			io.WriteString(w, `{"code": 21611, "message": "This 'From' number has exceeded the maximum number of queued messages", "more_info": "https://www.twilio.com/docs/errors/21611", "status": 400}`)
		case "+15005550012":
			w.WriteHeader(401)
			io.WriteString(w, `{"code": 20003, "message": "Authenticate", "more_info": "https://www.twilio.com/docs/errors/20003", "status": 401}`)
		case "+15005550013":
			w.WriteHeader(400)
			io.WriteString(w, `{"code": 21610, "message": "Attempt to send to unsubscribed recipient", "more_info": "https://www.twilio.com/docs/errors/21610", "status": 400}`)
		case "+15005550014":
			w.WriteHeader(400)
			io.WriteString(w, `{"code": 21614, "message": "'To' number is not a valid mobile number", "more_info": "https://www.twilio.com/docs/errors/21614", "status": 400}`)
		case "+15005550015": // the sender's own From, answered as if it were not the account's
			w.WriteHeader(400)
			io.WriteString(w, `{"code": 21601, "message": "Phone number +15005550006 is not a valid SMS-capable inbound phone number", "more_info": "https://www.twilio.com/docs/errors/21601", "status": 400}`)
		case "+15005550017": // the From belongs to another (sub)account than the credentials'
			w.WriteHeader(400)
			io.WriteString(w, `{"code": 21660, "message": "Mismatch between the 'From' number +15005550006 and the account", "more_info": "https://www.twilio.com/docs/errors/21660", "status": 400}`)
		case "+15005550016":
			w.WriteHeader(404)
			io.WriteString(w, `{"code": 21701, "message": "The Messaging Service does not exist", "more_info": "https://www.twilio.com/docs/errors/21701", "status": 404}`)
		default:
			rec.mu.Lock()
			rec.sent = append(rec.sent, to)
			rec.forms = append(rec.forms, r.PostForm)
			n := len(rec.sent)
			rec.mu.Unlock()
			w.WriteHeader(201)
			fmt.Fprintf(w, `{"account_sid": "AC0123", "body": %q, "direction": "outbound-api", "from": "+15005550006", "sid": "SM%08x%024d", "status": "queued", "to": %q}`,
				r.PostForm.Get("Body"), instance, n, to)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, rec
}

// SMSMessage is an SMS with a text.
func SMSMessage(id int64, to string) sender.Message {
	return sender.Message{ID: id, Channel: "sms", Recipient: to, Attempt: 1, Payload: json.RawMessage(`{"text":"Your code is 123456"}`)}
}

// SlackPosts are the messages a FakeSlack posted to its channels, by webhook path.
type SlackPosts struct {
	mu    sync.Mutex
	posts map[string][]string
}

// Of returns the bodies posted through the webhook at path.
func (p *SlackPosts) Of(path string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.posts[path]...)
}

// FakeSlack answers as Slack's incoming webhooks do (POST /services/T…/B…/<token>):
// the body must be a JSON object with a non-empty text or blocks, else 400
// invalid_payload (not JSON) or no_text; 200 "ok" when posted. The token chooses
// other answers: "archived" 410 channel_is_archived, "revoked" 404 no_service,
// "flooded" 429 rate_limited with Retry-After: 1.
func FakeSlack(t testing.TB) (*httptest.Server, *SlackPosts) {
	posts := &SlackPosts{posts: map[string][]string{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer := func(code int, text string) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(code)
			io.WriteString(w, text)
		}
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/services/") {
			answer(http.StatusNotFound, "no_service")
			return
		}
		switch r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:] {
		case "archived":
			answer(http.StatusGone, "channel_is_archived")
			return
		case "revoked":
			answer(http.StatusNotFound, "no_service")
			return
		case "flooded":
			w.Header().Set("Retry-After", "1")
			answer(http.StatusTooManyRequests, "rate_limited")
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var msg map[string]json.RawMessage
		if err := json.Unmarshal(body, &msg); err != nil {
			answer(http.StatusBadRequest, "invalid_payload")
			return
		}
		var text string
		_ = json.Unmarshal(msg["text"], &text)
		if text == "" && len(msg["blocks"]) == 0 {
			answer(http.StatusBadRequest, "no_text")
			return
		}
		posts.mu.Lock()
		posts.posts[r.URL.Path] = append(posts.posts[r.URL.Path], string(body))
		posts.mu.Unlock()
		answer(http.StatusOK, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, posts
}
