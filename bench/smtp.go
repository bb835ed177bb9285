package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/herald/herald/runner/sender/sendertest"
)

// smtpDeliver: one `herald run` sends e-mail through its SMTP sender to a relay on
// loopback (STARTTLS, AUTH PLAIN) whose every write arrives o.smtpRTT late, as from a
// relay that far away. Messages/s against one message per connection (HERALD_SMTP_POOL)
// and round trip, which gives the round trips a message costs (connection set-up
// spread over the run included); the relay's replies and new connections per message.
func smtpDeliver(ctx context.Context, db *database, o options) ([]row, error) {
	bin, err := buildHerald(ctx)
	if err != nil {
		return nil, err
	}
	relay, err := startSlowRelay(o.smtpRTT)
	if err != nil {
		return nil, err
	}
	defer relay.close()
	if err := db.reset(ctx); err != nil {
		return nil, err
	}
	for done := 0; done < o.smtpMessages; done += 1000 {
		if _, err := db.pool.Exec(ctx, `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email',
			'recipient', 'u' || g || '@example.com', 'payload', '{"subject":"Hi","text":"Hello"}'::jsonb))
			FROM generate_series($2::int, $2::int + $1::int - 1) g))`, min(1000, o.smtpMessages-done), done); err != nil {
			return nil, err
		}
	}
	if err := settle(ctx, db, "herald.messages"); err != nil {
		return nil, err
	}
	if _, err := db.pool.Exec(ctx, `SELECT herald.pause_channel('email', 'bench: until the runner listens')`); err != nil {
		return nil, err
	}
	defer db.pool.Exec(context.WithoutCancel(ctx), `SELECT herald.resume_channel('email')`)
	host, port, _ := net.SplitHostPort(relay.addr)
	p, err := startRunner(bin, db.url, "HERALD_SENDER_EMAIL=smtp", "HERALD_SMTP_HOST="+host, "HERALD_SMTP_PORT="+port,
		"HERALD_SMTP_CA_FILE="+relay.caFile, "HERALD_SMTP_USERNAME=bench", "HERALD_SMTP_PASSWORD=bench",
		"HERALD_EMAIL_FROM=bench@example.com", fmt.Sprintf("HERALD_SMTP_POOL=%d", o.smtpPool),
		"HERALD_START_CHECK=off", "HERALD_POLL_INTERVAL=100ms", "HERALD_STATS_INTERVAL=1h")
	if err != nil {
		return nil, err
	}
	defer p.stop()
	if err := waitListening(ctx, db, 1); err != nil {
		return nil, err
	}
	relay.writes.Store(0)
	relay.conns.Store(0)
	if _, err := db.pool.Exec(ctx, `SELECT herald.resume_channel('email')`); err != nil {
		return nil, err
	}
	label := fmt.Sprintf("smtp, pool %d, %v round trip", o.smtpPool, o.smtpRTT)
	rate, _, err := watch(ctx, db, "herald.messages", label, o.smtpMessages, nil)
	if err != nil {
		return nil, err
	}
	if taken := relay.taken.Load(); taken != int64(o.smtpMessages) {
		return nil, fmt.Errorf("smtp: the relay took %d messages for %d", taken, o.smtpMessages)
	}
	// One message per connection and round trip is what no SMTP client passes: the
	// ratio is 1 / the round trips a message costs.
	perTrip := float64(o.smtpPool) / o.smtpRTT.Seconds()
	return []row{
		ratioRowValues(fmt.Sprintf("%s: messages/s vs one message per connection and round trip (%d messages)", label, o.smtpMessages),
			"messages/s", rate, perTrip, 0),
		absRow(label+": round trips per message (pool / (messages/s × round trip))", "round trips", perTrip/rate, 0),
		absRow(label+": server replies per message", "replies", float64(relay.writes.Load())/float64(o.smtpMessages), 0),
		absRow(label+": new connections per 100 messages", "connections", 100*float64(relay.conns.Load())/float64(o.smtpMessages), 0),
	}, nil
}

// slowRelay is an SMTP relay on loopback (go-smtp: STARTTLS, any AUTH PLAIN
// accepted) that takes every message and delivers each reply rtt late (slowConn),
// counting its writes, its connections and the messages it took.
type slowRelay struct {
	addr, caFile         string
	srv                  *smtp.Server
	dir                  string
	writes, conns, taken atomic.Int64
}

func startSlowRelay(rtt time.Duration) (*slowRelay, error) {
	certPEM, keyPEM, err := sendertest.SelfSignedPEM()
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "herald-bench-smtp-")
	if err != nil {
		return nil, err
	}
	r := &slowRelay{dir: dir, caFile: filepath.Join(dir, "ca.pem")}
	if err := os.WriteFile(r.caFile, certPEM, 0o600); err != nil {
		return nil, err
	}
	r.srv = smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &relaySession{r: r}, nil }))
	r.srv.Domain, r.srv.TLSConfig = "localhost", &tls.Config{Certificates: []tls.Certificate{cert}}
	r.srv.ReadTimeout, r.srv.WriteTimeout = time.Minute, time.Minute
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r.addr = ln.Addr().String()
	go r.srv.Serve(slowListener{Listener: ln, r: r, rtt: rtt})
	return r, nil
}

func (r *slowRelay) close() {
	r.srv.Close()
	os.RemoveAll(r.dir)
}

type slowListener struct {
	net.Listener
	r   *slowRelay
	rtt time.Duration
}

func (l slowListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.r.conns.Add(1)
		c = newSlowConn(c, l.r, l.rtt)
	}
	return c, err
}

// slowConn delivers each write rtt after it was made, in order, without holding up
// the writes after it: a link with that much latency, on which replies the server
// sends back to back (to pipelined commands) arrive together.
type slowConn struct {
	net.Conn
	r    *slowRelay
	rtt  time.Duration
	out  chan delayed
	once *sync.Once
}

type delayed struct {
	b   []byte
	due time.Time
}

func newSlowConn(c net.Conn, r *slowRelay, rtt time.Duration) slowConn {
	sc := slowConn{Conn: c, r: r, rtt: rtt, out: make(chan delayed, 64), once: &sync.Once{}}
	go func() {
		for d := range sc.out {
			time.Sleep(time.Until(d.due))
			if _, err := c.Write(d.b); err != nil {
				break
			}
		}
		c.Close()
		for range sc.out {
		}
	}()
	return sc
}

func (c slowConn) Write(b []byte) (int, error) {
	c.r.writes.Add(1)
	c.out <- delayed{b: bytes.Clone(b), due: time.Now().Add(c.rtt)}
	return len(b), nil
}

// Close closes the connection once what was written has left.
func (c slowConn) Close() error {
	c.once.Do(func() { close(c.out) })
	return nil
}

type relaySession struct{ r *slowRelay }

func (s *relaySession) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *relaySession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(string, string, string) error { return nil }), nil
}
func (s *relaySession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *relaySession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *relaySession) Data(r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	if err == nil {
		s.r.taken.Add(1)
	}
	return err
}
func (s *relaySession) Reset()        {}
func (s *relaySession) Logout() error { return nil }
