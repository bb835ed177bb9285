package tests

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// received is one message as the SMTP server got it.
type received struct {
	From string
	To   []string
	Data string
}

// smtpServer is an in-process SMTP server speaking STARTTLS and AUTH PLAIN on
// loopback (TLS required before AUTH). Recipients choose its answers: busy@… 451 4.3.0, slow-down@… 451 4.7.1
// (throttling), unknown@… 550 5.1.1, drop@… the connection is cut during DATA.
type smtpServer struct {
	Addr     string
	CAFile   string // PEM of the server certificate, for the client's trust
	TLS      *tls.Config
	User     string
	Password string

	mu    sync.Mutex
	msgs  []received
	conns map[string]bool // client addresses: one per connection (STARTTLS starts a new session, not a new connection)
}

func (s *smtpServer) messages() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.msgs...)
}

func (s *smtpServer) connCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// selfSigned makes a certificate for 127.0.0.1 and localhost and writes its PEM.
func selfSigned(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
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
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, _ := x509.MarshalECPrivateKey(key)
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return cert, file
}

// startSMTP starts the server; withTLS false gives a plain relay with no AUTH.
func startSMTP(t *testing.T, withTLS bool) *smtpServer {
	return startSMTPMode(t, withTLS, false)
}

// startSMTPMode starts the server; implicit puts TLS on the connection from the
// first byte (SMTPS) instead of offering STARTTLS.
func startSMTPMode(t *testing.T, withTLS, implicit bool) *smtpServer {
	t.Helper()
	s := &smtpServer{User: "herald", Password: "s3cret-pw", conns: map[string]bool{}}
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
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

type smtpSession struct {
	srv      *smtpServer
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
			return errors.New("invalid credentials")
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
	s.from = from
	return nil
}

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	switch strings.SplitN(to, "@", 2)[0] {
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
	s.srv.msgs = append(s.srv.msgs, received{From: s.from, To: s.to, Data: string(b)})
	s.srv.mu.Unlock()
	return nil
}

func (s *smtpSession) Reset()        { s.from, s.to = "", nil }
func (s *smtpSession) Logout() error { return nil }
