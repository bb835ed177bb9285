package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/herald/herald/runner/sender/sendertest"
)

// deliver: real `herald run` processes send through the real SendGrid (e-mail),
// Twilio (SMS) and webhook (a channel "hooks", to https://localhost:…/hook, allowed
// by HERALD_WEBHOOK_ALLOW) senders to a fake provider on loopback that speaks HTTPS with its own
// CA (passed as HERALD_SENDGRID_CA_FILE / HERALD_TWILIO_CA_FILE) and answers after a
// jittered latency, optionally enforcing a rate with 429 + Retry-After. For 1, 2 and
// 4 runners with the defaults (adaptive concurrency), and for 1 runner with the old
// fixed 16 sends at once: messages/s against the setup's physical limit
// (min(provider rate, the sends the runners may have in flight in each lane — the
// providers' two thirds of the messages, the receivers' third — over the latency)), new TCP
// connections and TLS handshakes per message, 429s provoked, CPU per message (runners
// and database server), the runners' largest RSS, and a chart of throughput over time.
func deliver(ctx context.Context, db *database, o options) ([]row, error) {
	if o.deliverEmail != "sendgrid" && o.deliverEmail != "ses" {
		return nil, fmt.Errorf("-deliver-email %q: want sendgrid or ses", o.deliverEmail)
	}
	bin, err := buildHerald(ctx)
	if err != nil {
		return nil, err
	}
	var prov *fakeProvider
	if o.deliverProvider != "" { // a provider started by `bench provider` (bench/compare/deliver.sh)
		prov, err = remoteProvider(o.deliverProvider)
	} else {
		prov, err = startFakeProvider(o.deliverLatency, o.deliverRate)
	}
	if err != nil {
		return nil, err
	}
	defer prov.close()

	type config struct {
		label   string
		runners int
		env     []string
		rated   bool          // the channels' rates set in SQL to the provider's (half each)
		spans   *atomic.Int64 // traced: the spans the collector received
	}
	var configs []config
	for _, c := range strings.Split(o.deliverConfigs, ",") {
		switch c {
		case "fixed16":
			configs = append(configs, config{"1 runner, fixed 16 at once (the old default)", 1, []string{"HERALD_CONCURRENCY=16", "HERALD_CONCURRENCY_FIXED=true"}, false, nil})
			continue
		case "site":
			configs = append(configs, config{"1 runner, the webhooks' one site bounded at 32 in flight (the default)", 1, []string{"HERALD_WEBHOOK_HOST_CONCURRENCY=32"}, false, nil})
			continue
		case "traced":
			spans := &atomic.Int64{}
			sink := startSpanSink(spans)
			defer sink.Close()
			configs = append(configs, config{"1 runner, every send traced (OTLP/HTTP to a collector that discards)", 1,
				[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.URL}, false, spans})
			continue
		}
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-deliver-configs: %q is not fixed16, site, traced or a number of runners", c)
		}
		configs = append(configs, config{fmt.Sprintf("%d runner(s), defaults", n), n, nil, false, nil})
	}
	if o.deliverRate > 0 {
		configs = append(configs, config{"4 runner(s), the provider's rate set on the channels", 4, nil, true, nil})
	}
	var rows []row
	var curves []series
	var fixedRate float64
	for i, c := range configs {
		rate := "NULL"
		if c.rated {
			rate = strconv.FormatFloat(float64(o.deliverRate)/3, 'f', -1, 64)
		}
		if _, err := db.pool.Exec(ctx, `UPDATE herald.channels SET rate = `+rate+` WHERE name IN ('email', 'sms', 'hooks')`); err != nil {
			return nil, err
		}
		if c.spans != nil {
			c.spans.Store(0)
		}
		d, err := deliverRun(ctx, db, o, bin, prov, c.label, c.runners, c.env)
		if err != nil {
			return nil, err
		}
		if c.spans != nil { // the runners have stopped, exporting what they held
			rows = append(rows, absRow(fmt.Sprintf("deliver, %s: spans exported per message", c.label), "spans", float64(c.spans.Load())/float64(o.deliverMessages), 0))
		}
		curves = append(curves, d.curve)
		// Two lanes of sends per runner, each of HERALD_CONCURRENCY: the providers' (two
		// thirds of the messages) and the webhook receivers' (a third), in parallel.
		lane := float64(c.runners * 512)
		if len(c.env) > 0 && strings.Contains(c.env[0], "CONCURRENCY=16") {
			lane = 16
		}
		receivers := lane
		if len(c.env) > 0 && strings.Contains(c.env[0], "HOST_CONCURRENCY") { // the one site's 32 per runner
			receivers = 32
		}
		physical := min(lane*3/2, receivers*3) / o.deliverLatency.Seconds()
		if o.deliverRate > 0 {
			physical = min(physical, float64(o.deliverRate))
		}
		rows = append(rows,
			ratioRowValues(fmt.Sprintf("deliver, %s: messages/s vs the physical limit (%d messages, %v provider)", c.label, o.deliverMessages, o.deliverLatency),
				"messages/s", d.rate, physical, 0),
			absRow(fmt.Sprintf("deliver, %s: new TCP connections per 100 messages", c.label), "connections", 100*float64(d.conns)/float64(o.deliverMessages), 1),
			absRow(fmt.Sprintf("deliver, %s: TLS handshakes per 100 messages", c.label), "handshakes", 100*float64(d.handshakes)/float64(o.deliverMessages), 0),
			absRow(fmt.Sprintf("deliver, %s: 429s provoked", c.label), "answers", float64(d.limited), 0),
			absRow(fmt.Sprintf("deliver, %s: max runner RSS", c.label), "MiB", float64(d.rss)/(1<<20), 0),
		)
		if d.cpuKnown {
			rows = append(rows,
				absRow(fmt.Sprintf("deliver, %s: runner CPU per message", c.label), "µs", perMessage(d.clientCPU, o.deliverMessages), 0),
				absRow(fmt.Sprintf("deliver, %s: database server CPU per message", c.label), "µs", perMessage(d.serverCPU, o.deliverMessages), 0))
		}
		switch {
		case len(c.env) > 0 && strings.Contains(c.env[0], "CONCURRENCY=16"):
			fixedRate = d.rate
		case i > 0 && c.runners == 1 && fixedRate > 0 && len(c.env) == 0:
			rows = append(rows, ratioRowValues("deliver: 1 runner, adaptive vs fixed 16 at once", "messages/s", d.rate, fixedRate, 0))
		}
	}
	if err := writeLineChart(o.outDir+"/deliver-throughput.svg", fmt.Sprintf("deliver %d messages through a %v provider: messages done per second",
		o.deliverMessages, o.deliverLatency), "seconds", "messages/s", curves); err != nil {
		return nil, err
	}
	return rows, nil
}

// startSpanSink serves OTLP/HTTP's traces endpoint: it counts the spans of every
// export in spans, keeps nothing and answers success.
func startSpanSink(spans *atomic.Int64) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &coltracepb.ExportTraceServiceRequest{}
		if proto.Unmarshal(body, req) != nil {
			http.Error(w, "not an OTLP/HTTP protobuf export", http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans.Add(int64(len(ss.Spans)))
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
	}))
}

// deliverRun is one delivery of the preloaded messages by n runners.
func deliverRun(ctx context.Context, db *database, o options, bin string, prov *fakeProvider, label string, n int, env []string) (drainRun, error) {
	if err := db.reset(ctx); err != nil {
		return drainRun{}, err
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook') ON CONFLICT DO NOTHING`); err != nil {
		return drainRun{}, err
	}
	for done := 0; done < o.deliverMessages; done += 1000 {
		k := min(1000, o.deliverMessages-done)
		if _, err := db.pool.Exec(ctx, `SELECT herald.enqueue_batch((SELECT jsonb_agg(CASE g % 3
			WHEN 0 THEN jsonb_build_object('channel', 'email', 'recipient', 'u' || g || '@example.com', 'payload', '{"subject":"Hi","text":"Hello"}'::jsonb)
			WHEN 1 THEN jsonb_build_object('channel', 'sms', 'recipient', '+1415' || lpad(g::text, 7, '0'), 'payload', '{"text":"Your code is 123456"}'::jsonb)
			ELSE jsonb_build_object('channel', 'hooks', 'recipient', $3::text || '/hook', 'payload', jsonb_build_object('order', g)) END)
			FROM generate_series($2::int, $2::int + $1::int - 1) g))`, k, done, strings.Replace(prov.url, "127.0.0.1", "localhost", 1)); err != nil {
			return drainRun{}, err
		}
	}
	if err := settle(ctx, db, "herald.messages"); err != nil {
		return drainRun{}, err
	}
	for _, ch := range []string{"email", "sms", "hooks"} {
		if _, err := db.pool.Exec(ctx, `SELECT herald.pause_channel($1, 'bench: until the runners listen')`, ch); err != nil {
			return drainRun{}, err
		}
	}
	defer db.pool.Exec(context.WithoutCancel(ctx), `SELECT herald.resume_channel('email'), herald.resume_channel('sms'), herald.resume_channel('hooks')`)
	emailSender := []string{"HERALD_SENDER_EMAIL=sendgrid", "HERALD_SENDGRID_URL=" + prov.url, "HERALD_SENDGRID_CA_FILE=" + prov.caFile,
		"HERALD_SENDGRID_API_KEY=SG.bench"}
	if o.deliverEmail == "ses" {
		emailSender = []string{"HERALD_SENDER_EMAIL=ses", "HERALD_SES_URL=" + prov.url, "HERALD_SES_CA_FILE=" + prov.caFile,
			"HERALD_SES_REGION=us-east-1", "AWS_ACCESS_KEY_ID=AKIDBENCH", "AWS_SECRET_ACCESS_KEY=bench", "AWS_EC2_METADATA_DISABLED=true"}
	}
	base := append(emailSender, "HERALD_EMAIL_FROM=Bench <bench@example.com>",
		"HERALD_SENDER_SMS=twilio", "HERALD_TWILIO_URL="+prov.url, "HERALD_TWILIO_CA_FILE="+prov.caFile,
		"HERALD_TWILIO_ACCOUNT_SID=ACbench", "HERALD_TWILIO_AUTH_TOKEN=bench", "HERALD_TWILIO_FROM=+15005550006",
		"HERALD_SENDER_HOOKS=webhook", "HERALD_HOOKS_WEBHOOK_SECRETS=whsec_YmVuY2gtd2ViaG9vay1zZWNyZXQtMzItYnl0ZXMhIQ==",
		"HERALD_WEBHOOK_ALLOW=localhost", "HERALD_WEBHOOK_CA_FILE="+prov.caFile,
		"HERALD_START_CHECK=off", "HERALD_POLL_INTERVAL=100ms", "HERALD_STATS_INTERVAL=1h",
		// The webhooks' one receiver stands for many sites: no bound per site, but
		// in the "site" run.
		"HERALD_WEBHOOK_HOST_CONCURRENCY=-1")
	var procs []*runnerProc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	for i := 0; i < n; i++ {
		p, err := startRunner(bin, db.url, append(append([]string{fmt.Sprintf("HERALD_WORKER=deliver-%d", i)}, base...), env...)...)
		if err != nil {
			return drainRun{}, err
		}
		procs = append(procs, p)
	}
	if err := waitListening(ctx, db, n); err != nil {
		return drainRun{}, err
	}
	clients := []int{os.Getpid()}
	for _, p := range procs {
		clients = append(clients, p.cmd.Process.Pid)
	}
	prov.resetCounts()
	cpu := startCPU(postmaster(ctx, db), clients)
	if _, err := db.pool.Exec(ctx, `SELECT herald.resume_channel('email'), herald.resume_channel('sms'), herald.resume_channel('hooks')`); err != nil {
		return drainRun{}, err
	}
	d := drainRun{}
	var err error
	d.rate, d.curve, err = watch(ctx, db, "herald.messages", label, o.deliverMessages, func() {
		for _, p := range procs {
			d.rss = max(d.rss, p.rssBytes())
		}
	})
	d.serverCPU, d.clientCPU, d.cpuKnown = cpu.stop()
	d.conns, d.handshakes, d.limited = prov.counts()
	return d, err
}

// fakeProvider answers SendGrid's Mail Send, SES's SendEmail and Twilio's Messages API over HTTPS after
// a jittered latency, optionally 429 beyond a rate, and counts connections,
// handshakes and 429s.
type fakeProvider struct {
	url, caFile string
	srv         *http.Server
	conns       atomic.Int64
	handshakes  atomic.Int64
	limited     atomic.Int64
	requests    atomic.Int64

	mu     sync.Mutex
	tokens float64
	last   time.Time
	rate   float64
}

func (p *fakeProvider) resetCounts() {
	if p.srv == nil {
		http.Post(p.url+"/_reset", "text/plain", nil)
		return
	}
	p.conns.Store(0)
	p.handshakes.Store(0)
	p.limited.Store(0)
	p.requests.Store(0)
}

// counts are the new connections, handshakes and 429s since the last reset.
func (p *fakeProvider) counts() (conns, handshakes, limited int64) {
	if p.srv == nil {
		var c struct{ Conns, Handshakes, Limited int64 }
		if resp, err := p.client().Get(p.url + "/_counts"); err == nil {
			json.NewDecoder(resp.Body).Decode(&c)
			resp.Body.Close()
		}
		return c.Conns, c.Handshakes, c.Limited
	}
	return p.conns.Load(), p.handshakes.Load(), p.limited.Load()
}

// client is an HTTP client that trusts the provider's CA.
func (p *fakeProvider) client() *http.Client {
	pem, _ := os.ReadFile(p.caFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// remoteProvider is a provider another process serves: "URL CAFILE" as `bench
// provider` prints them.
func remoteProvider(spec string) (*fakeProvider, error) {
	url, ca, ok := strings.Cut(spec, " ")
	if !ok {
		return nil, fmt.Errorf("-deliver-provider: want \"URL CAFILE\", got %q", spec)
	}
	return &fakeProvider{url: url, caFile: ca}, nil
}

// providerCommand is `bench provider`: serve the fake provider until SIGTERM,
// printing "URL CAFILE" on one line once it listens (bench/compare/deliver.sh).
func providerCommand(args []string) int {
	fs := flag.NewFlagSet("bench provider", flag.ExitOnError)
	latency := fs.Duration("latency", 100*time.Millisecond, "answer time (jittered ±20 %)")
	rate := fs.Int("rate", 0, "requests per second before 429 (0: none)")
	fs.Parse(args)
	p, err := startFakeProvider(*latency, *rate)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench provider:", err)
		return 1
	}
	defer p.close()
	fmt.Println(p.url, p.caFile)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	return 0
}

// allow takes a token of the provider's rate (true when it has no rate).
func (p *fakeProvider) allow() bool {
	if p.rate <= 0 {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.tokens = min(p.rate, p.tokens+p.rate*now.Sub(p.last).Seconds())
	p.last = now
	if p.tokens < 1 {
		return false
	}
	p.tokens--
	return true
}

func startFakeProvider(latency time.Duration, rate int) (*fakeProvider, error) {
	p := &fakeProvider{rate: float64(rate), tokens: float64(rate), last: time.Now()}
	cert, caFile, err := benchCert()
	if err != nil {
		return nil, err
	}
	p.caFile = caFile
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.url = "https://" + ln.Addr().String()
	var sid atomic.Int64
	p.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path { // the bench's own questions: no latency, not counted
			case "/_counts":
				json.NewEncoder(w).Encode(map[string]int64{"conns": p.conns.Load(), "handshakes": p.handshakes.Load(), "limited": p.limited.Load()})
				return
			case "/_reset":
				p.resetCounts()
				return
			}
			p.requests.Add(1)
			time.Sleep(time.Duration(float64(latency) * (0.8 + 0.4*mrand.Float64()))) // ±20 %
			if !p.allow() {
				p.limited.Add(1)
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				w.Write([]byte(`{"errors":[{"message":"too many requests"}]}`))
				return
			}
			n := sid.Add(1)
			switch {
			case r.URL.Path == "/v3/mail/send":
				w.Header().Set("X-Message-Id", "bench-"+strconv.FormatInt(n, 10))
				w.WriteHeader(http.StatusAccepted)
			case r.URL.Path == "/v2/email/outbound-emails": // SES v2 SendEmail (the signature is not checked)
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"MessageId":"bench-%d"}`, n)
			case r.URL.Path == "/hook":
				w.Header().Set("X-Request-Id", "hook-"+strconv.FormatInt(n, 10))
				w.WriteHeader(http.StatusOK)
			case strings.HasSuffix(r.URL.Path, "/Messages.json"):
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				fmt.Fprintf(w, `{"sid":"SM%032d","status":"queued"}`, n)
			default:
				w.WriteHeader(http.StatusNotFound)
			}
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				p.conns.Add(1)
			}
		},
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert},
			GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { p.handshakes.Add(1); return nil, nil }},
	}
	go p.srv.ServeTLS(ln, "", "")
	return p, nil
}

func (p *fakeProvider) close() {
	if p.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.srv.Shutdown(ctx)
	os.RemoveAll(filepath.Dir(p.caFile))
}

// benchCert makes the provider's certificate (sendertest.SelfSignedPEM, its own CA)
// and writes it as the CA file the senders trust.
func benchCert() (tls.Certificate, string, error) {
	certPEM, keyPEM, err := sendertest.SelfSignedPEM()
	if err != nil {
		return tls.Certificate{}, "", err
	}
	dir, err := os.MkdirTemp("", "herald-bench-ca-")
	if err != nil {
		return tls.Certificate{}, "", err
	}
	file := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(file, certPEM, 0o644); err != nil {
		return tls.Certificate{}, "", err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	return cert, file, err
}
