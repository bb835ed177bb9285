package tests

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald/herald/runner/events"
	"github.com/herald/herald/runner/sender/email"
)

// fakeSNS stands in for Amazon SNS's HTTPS hosts: it serves signing certificates
// (one that chains to its CA, one self-signed) and subscription confirmations, and
// counts what it was asked; it signs messages as SNS does.
type fakeSNS struct {
	srv      *httptest.Server
	ca       *x509.CertPool
	key      *rsa.PrivateKey // the key of the certificate at /SimpleNotificationService-good.pem
	rogue    *rsa.PrivateKey // the key of the self-signed one at /SimpleNotificationService-rogue.pem
	good     []byte          // that certificate's PEM
	mu       sync.Mutex
	requests []string // paths asked for, in order
}

// newFakeSNS starts the stand-in on 127.0.0.1.
func newFakeSNS(t *testing.T) *fakeSNS {
	t.Helper()
	f := &fakeSNS{ca: x509.NewCertPool()}
	caKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Test Root CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	f.ca.AddCert(caCert)
	leaf := func(signer *x509.Certificate, signerKey, key *rsa.PrivateKey) []byte {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "sns.amazonaws.com"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
		if signer == nil {
			signer = tmpl
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	f.key, _ = rsa.GenerateKey(rand.Reader, 2048)
	f.rogue, _ = rsa.GenerateKey(rand.Reader, 2048)
	f.good = leaf(caCert, caKey, f.key)
	rogue := leaf(nil, f.rogue, f.rogue)
	f.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.URL.Path)
		f.mu.Unlock()
		switch r.URL.Path {
		case "/SimpleNotificationService-good.pem":
			w.Write(f.good)
		case "/SimpleNotificationService-rogue.pem":
			w.Write(rogue)
		case "/confirm":
			if r.URL.Query().Get("Token") == "" {
				w.WriteHeader(400)
			}
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// asked returns the paths the stand-in was asked for.
func (f *fakeSNS) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

// sign fills in the signature fields of m (an SNS message as a map), as Amazon SNS
// documents them: the fields' names and values on their own lines, in order, RSA
// over SHA-1 (version 1) or SHA-256 (version 2).
func (f *fakeSNS) sign(t *testing.T, m map[string]string, version string, key *rsa.PrivateKey, certPath string) {
	t.Helper()
	fields := []string{"Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"}
	if m["Type"] != "Notification" {
		fields = []string{"Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"}
	}
	var b strings.Builder
	for _, k := range fields {
		if v, ok := m[k]; ok {
			b.WriteString(k + "\n" + v + "\n")
		}
	}
	var sig []byte
	var err error
	if version == "1" {
		d := sha1.Sum([]byte(b.String()))
		sig, err = rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA1, d[:])
	} else {
		d := sha256.Sum256([]byte(b.String()))
		sig, err = rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, d[:])
	}
	if err != nil {
		t.Fatal(err)
	}
	m["SignatureVersion"], m["Signature"] = version, base64.StdEncoding.EncodeToString(sig)
	m["SigningCertURL"] = f.srv.URL + certPath
}

// smtpSent stores e-mails to recipients, each with a copy to copy@example.net, and
// completes them as the SMTP sender does, with its Message-ID (heraldMessageID) as the provider id; returns the ids.
func smtpSent(t *testing.T, pool *pgxpool.Pool, recipients ...string) []int64 {
	t.Helper()
	var ids []int64
	var msgIDs []string
	for _, r := range recipients {
		id := scalar[int64](t, pool, `SELECT herald.enqueue('email', $1, '{"subject":"s","text":"t","cc":["copy@example.net"]}')`, r)
		ids, msgIDs = append(ids, id), append(msgIDs, heraldMessageID(t, pool, id))
	}
	mustExec(t, pool, `SELECT count(*) FROM herald.claim_batch('w', 100, channels => ARRAY['email'])`)
	mustExec(t, pool, `SELECT herald.complete($1::bigint[], (SELECT array_agg(lease_token ORDER BY id) FROM herald.messages WHERE id = ANY ($1)), $2)`,
		ids, msgIDs)
	return ids
}

// sesMessage is an SES notification about herald message id to its To recipient,
// with the original headers (its Message-ID msgID), as SES publishes it; extra is the
// notification's own object ("bounce": {…}).
func sesMessage(kind string, id int64, msgID, to, extra string) string {
	return fmt.Sprintf(`{"%s":%q,"mail":{"timestamp":"2026-11-26T10:00:00.000Z","source":"noreply@example.com",
		"messageId":"0100018c-ses-%d","destination":[%q,"copy@example.net"],"headersTruncated":false,
		"commonHeaders":{"from":["Herald <noreply@example.com>"],"to":["Ana Lima <%s>"],"messageId":%q,"subject":"s"}},%s}`,
		map[bool]string{true: "eventType", false: "notificationType"}[kind == "Open" || kind == "Send"], kind, id, to, to, msgID, extra)
}

// Amazon SES's notifications through Amazon SNS: a subscription is confirmed; a
// bounce, a complaint and a delivery reach their messages (matched by the Message-ID
// herald set) and a hard bounce and a complaint suppress the recipient; a copy's
// bounce suppresses the copy and leaves the message's outcome alone; a bounce of an
// address the message never went to suppresses nothing; opens and a not-spam report
// are ignored; a Send (SES took it: processed) of a message herald marked sent tells
// nothing new; a replay changes nothing twice. Attacks, each
// 401 with nothing stored: a validly signed message of another account's topic, a
// tampered message, a certificate on a host that is not SNS's (never fetched), over
// http, or not from SNS's CA; a subscription to confirm on another host is not visited.
func TestSESNotifications(t *testing.T) {
	_, pool := setup(t)
	sns := newFakeSNS(t)
	const topic = "arn:aws:sns:eu-west-1:123456789012:ses-events"
	// attacker.test serves SNS's good certificate too and confirms anything: herald
	// must never ask it (its client would reach it: the name resolves to it here and
	// its TLS is not checked, so only the host rule stands in the way).
	var attackerAsked atomic.Int64
	attacker := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attackerAsked.Add(1)
		w.Write(sns.good)
	}))
	t.Cleanup(attacker.Close)
	tr := sns.srv.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.InsecureSkipVerify = true
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if strings.HasPrefix(addr, "attacker.test:") {
			addr = attacker.Listener.Addr().String()
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	base := eventsServer(t, pool, func(string) events.Config {
		return events.Config{SESTopics: []string{topic}, SNSClient: &http.Client{Transport: tr},
			SNSHosts: regexp.MustCompile(`^127\.0\.0\.1$`), SNSRoots: sns.ca}
	})
	ids := smtpSent(t, pool, "ana@example.com", "bo@example.com", "cy@example.com", "dee@example.com")
	msgID := func(i int) string { return heraldMessageID(t, pool, ids[i]) }

	n := 0
	message := func(typ, msg string) map[string]string {
		n++
		m := map[string]string{"Type": typ, "MessageId": fmt.Sprintf("sns-%d", n), "TopicArn": topic, "Message": msg,
			"Timestamp": "2026-11-26T10:00:01.000Z"}
		if typ != "Notification" {
			m["Token"], m["SubscribeURL"] = "tok", sns.srv.URL+"/confirm?Action=ConfirmSubscription&Token=tok"
		}
		return m
	}
	post := func(m map[string]string) (int, eventsResult) {
		t.Helper()
		b, _ := json.Marshal(m)
		var res eventsResult
		code := do(t, "POST", base+"/v1/events/ses", "text/plain; charset=UTF-8", string(b),
			map[string]string{"x-amz-sns-message-type": m["Type"]}, &res)
		return code, res
	}
	stored := func() int64 { return scalar[int64](t, pool, `SELECT count(*) FROM herald.delivery_events`) }

	sub := message("SubscriptionConfirmation", "You have chosen to subscribe to the topic "+topic)
	sns.sign(t, sub, "2", sns.key, "/SimpleNotificationService-good.pem")
	if code, _ := post(sub); code != 200 || !strings.Contains(strings.Join(sns.asked(), " "), "/confirm") {
		t.Fatalf("subscription confirmation: %d, asked %v", code, sns.asked())
	}

	bounce := message("Notification", sesMessage("Bounce", ids[0], msgID(0), "ana@example.com", `"bounce":{"bounceType":"Permanent",
		"bounceSubType":"General","bouncedRecipients":[{"emailAddress":"ana@example.com","action":"failed","status":"5.1.1",
		"diagnosticCode":"smtp; 550 5.1.1 user unknown"}],"timestamp":"2026-11-26T10:00:02.000Z","feedbackId":"f1"}`))
	sns.sign(t, bounce, "1", sns.key, "/SimpleNotificationService-good.pem")

	// The attacks first: nothing may be stored or fetched by any of them.
	foreignTopic := message("Notification", bounce["Message"])
	foreignTopic["TopicArn"] = "arn:aws:sns:eu-west-1:999999999999:attacker"
	sns.sign(t, foreignTopic, "2", sns.key, "/SimpleNotificationService-good.pem")
	tampered := message("Notification", bounce["Message"])
	sns.sign(t, tampered, "2", sns.key, "/SimpleNotificationService-good.pem")
	tampered["Message"] = strings.Replace(tampered["Message"], "ana@example.com", "bo@example.com", -1)
	otherHost := message("Notification", bounce["Message"])
	sns.sign(t, otherHost, "2", sns.key, "/SimpleNotificationService-good.pem")
	otherHost["SigningCertURL"] = "https://attacker.test/SimpleNotificationService-good.pem"
	plain := message("Notification", bounce["Message"])
	sns.sign(t, plain, "2", sns.key, "/SimpleNotificationService-good.pem")
	var plainAsked atomic.Int64 // SNS's certificate over plain HTTP, on an allowed host
	plainSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainAsked.Add(1)
		w.Write(sns.good)
	}))
	t.Cleanup(plainSrv.Close)
	plain["SigningCertURL"] = plainSrv.URL + "/SimpleNotificationService-good.pem"
	rogue := message("Notification", bounce["Message"])
	sns.sign(t, rogue, "2", sns.rogue, "/SimpleNotificationService-rogue.pem")
	before := len(sns.asked())
	for name, m := range map[string]map[string]string{"another topic": foreignTopic, "tampered": tampered,
		"a certificate elsewhere": otherHost, "a certificate over http": plain, "a certificate not from SNS's CA": rogue} {
		if code, _ := post(m); code != 401 {
			t.Errorf("%s: %d, want 401", name, code)
		}
	}
	if got := sns.asked()[before:]; len(got) != 1 || got[0] != "/SimpleNotificationService-rogue.pem" {
		t.Fatalf("the refused messages made herald fetch %v (only the rogue certificate, on SNS's host, may be)", got)
	}
	elsewhere := message("SubscriptionConfirmation", "subscribe")
	elsewhere["SubscribeURL"] = "https://attacker.test/confirm?Token=tok"
	sns.sign(t, elsewhere, "2", sns.key, "/SimpleNotificationService-good.pem")
	if code, _ := post(elsewhere); code != 400 || len(sns.asked()) != before+1 {
		t.Fatalf("a subscription to confirm elsewhere: %d, asked %v", code, sns.asked()[before:])
	}
	if n := attackerAsked.Load() + plainAsked.Load(); n != 0 {
		t.Fatalf("herald asked attacker.test or over http %d times", n)
	}
	if got := stored(); got != 0 {
		t.Fatalf("refused messages stored %d events", got)
	}

	if code, res := post(bounce); code != 200 || res.Recorded != 1 {
		t.Fatalf("bounce: %d %+v", code, res)
	}
	if code, res := post(bounce); code != 200 || res.Duplicates != 1 {
		t.Fatalf("SNS's retry of the bounce: %d %+v", code, res)
	}
	complaint := message("Notification", sesMessage("Complaint", ids[1], msgID(1), "bo@example.com", `"complaint":{"complainedRecipients":
		[{"emailAddress":"bo@example.com"}],"complaintFeedbackType":"abuse","timestamp":"2026-11-26T10:00:03.000Z","feedbackId":"f2"}`))
	delivery := message("Notification", sesMessage("Delivery", ids[2], msgID(2), "cy@example.com", `"delivery":{"timestamp":"2026-11-26T10:00:04.000Z",
		"processingTimeMillis":546,"recipients":["cy@example.com"],"smtpResponse":"250 ok: Message 64111812 accepted","reportingMTA":"a8-70.smtp-out.amazonses.com"}`))
	copyBounce := message("Notification", sesMessage("Bounce", ids[3], msgID(3), "dee@example.com", `"bounce":{"bounceType":"Permanent",
		"bouncedRecipients":[{"emailAddress":"copy@example.net","status":"5.1.1"}],"timestamp":"2026-11-26T10:00:05.000Z"}`))
	strangerBounce := message("Notification", sesMessage("Bounce", ids[3], msgID(3), "dee@example.com", `"bounce":{"bounceType":"Permanent",
		"bouncedRecipients":[{"emailAddress":"stranger@example.org","status":"5.1.1"}],"timestamp":"2026-11-26T10:00:05.000Z"}`))
	open := message("Notification", sesMessage("Open", ids[2], msgID(2), "cy@example.com", `"open":{"timestamp":"2026-11-26T10:00:06.000Z"}`))
	send := message("Notification", sesMessage("Send", ids[2], msgID(2), "cy@example.com", `"send":{}`))
	notSpam := message("Notification", sesMessage("Complaint", ids[2], msgID(2), "cy@example.com", `"complaint":{"complainedRecipients":
		[{"emailAddress":"cy@example.com"}],"complaintFeedbackType":"not-spam","timestamp":"2026-11-26T10:00:07.000Z","feedbackId":"f3"}`))
	// Another herald installation sending through the same SES account and topic: its
	// message of the same id to the same address quotes another key's Message-ID.
	otherInstallation := message("Notification", sesMessage("Bounce", ids[2], email.MessageID(ids[2], []byte("another installation's key"), "example.com"),
		"cy@example.com", `"bounce":{"bounceType":"Permanent","bouncedRecipients":[{"emailAddress":"cy@example.com","status":"5.1.1"}],
		"timestamp":"2026-11-26T10:00:05.000Z"}`))
	for name, m := range map[string]map[string]string{"complaint": complaint, "delivery": delivery, "a copy's bounce": copyBounce,
		"a stranger's bounce": strangerBounce, "open": open, "a not-spam report": notSpam, "another installation's bounce": otherInstallation,
		"send": send} {
		sns.sign(t, m, "2", sns.key, "/SimpleNotificationService-good.pem")
		code, res := post(m)
		want := map[string]eventsResult{"a stranger's bounce": {Unknown: 1}, "open": {Ignored: 1}, "a not-spam report": {Ignored: 1},
			"another installation's bounce": {Unknown: 1}, "send": {Duplicates: 1}}[name] // SES took one herald knows it sent
		if want == (eventsResult{}) {
			want = eventsResult{Recorded: 1}
		}
		if code != 200 || res != want {
			t.Errorf("%s: %d %+v, want %+v", name, code, res, want)
		}
	}
	got := []string{outcome(t, pool, ids[0]), outcome(t, pool, ids[1]), outcome(t, pool, ids[2]), outcome(t, pool, ids[3])}
	if want := []string{"sent bounced hard 5.1.1", "sent complained - -", "sent delivered - -", "sent - - -"}; strings.Join(got, " / ") != strings.Join(want, " / ") {
		t.Fatalf("outcomes %q, want %q", got, want)
	}
	if sup := scalar[string](t, pool, `SELECT string_agg(recipient || ':' || reason || ':' || source, ' ' ORDER BY recipient) FROM herald.suppressions`); sup != "ana@example.com:bounced:ses bo@example.com:complained:ses copy@example.net:bounced:ses" {
		t.Fatalf("suppressions: %q", sup)
	}
	if n := strings.Count(strings.Join(sns.asked(), " "), "-good.pem"); n != 1 {
		t.Fatalf("the signing certificate was fetched %d times, want once (kept)", n)
	}
}
