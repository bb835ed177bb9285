package tests

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald/herald/runner"
	"github.com/herald/herald/runner/events"
	"github.com/herald/herald/runner/intake"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/sendertest"
	smtpsender "github.com/herald/herald/runner/sender/smtp"
	"github.com/herald/herald/runner/sender/webhook"
	"github.com/herald/herald/tests/testdb"
)

// sentMessages enqueues n messages on channel (e-mail or SMS), claims them and
// completes them with provider ids prefix+id, as a runner would; returns the ids.
func sentMessages(t *testing.T, pool *pgxpool.Pool, channel, prefix string, recipients ...string) []int64 {
	t.Helper()
	payload := `{"subject":"s","text":"t"}`
	if channel == "sms" {
		payload = `{"text":"t"}`
	}
	var ids []int64
	for _, r := range recipients {
		ids = append(ids, scalar[int64](t, pool, `SELECT herald.enqueue($1, $2, $3::jsonb)`, channel, r, payload))
	}
	rows := scalar[[]int64](t, pool, `SELECT array_agg(lease_token) FROM herald.claim_batch('w', 100, channels => ARRAY[$1])`, channel)
	if len(rows) != len(ids) {
		t.Fatalf("claimed %d of %d", len(rows), len(ids))
	}
	pids := make([]string, len(ids))
	for i, id := range ids {
		pids[i] = prefix + strconv.FormatInt(id, 10)
	}
	mustExec(t, pool, `SELECT herald.complete($1::bigint[], (SELECT array_agg(lease_token ORDER BY id) FROM herald.messages WHERE id = ANY ($1)), $2)`, ids, pids)
	return ids
}

// eventsServer serves the delivery-event endpoints cfg makes from the server's own
// URL (Twilio signs its callbacks with it) on pool until the test ends, and returns
// that URL.
func eventsServer(t *testing.T, pool *pgxpool.Pool, cfg func(base string) events.Config) string {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	events.Register(mux, pool, cfg(srv.URL))
	return srv.URL
}

// sendGridHeaders are the headers of SendGrid's Signed Event Webhook for body at ts,
// signed with key.
func sendGridHeaders(key *ecdsa.PrivateKey, ts int64, body string) map[string]string {
	tsText := strconv.FormatInt(ts, 10)
	digest := sha256.Sum256([]byte(tsText + body))
	sig, _ := ecdsa.SignASN1(rand.Reader, key, digest[:])
	return map[string]string{"X-Twilio-Email-Event-Webhook-Signature": base64.StdEncoding.EncodeToString(sig),
		"X-Twilio-Email-Event-Webhook-Timestamp": tsText}
}

type eventsResult struct {
	Recorded, Duplicates, Unknown, Ignored int
	Error, Field                           string
}

// outcome is a message's status and outcome, as herald.status shows them.
func outcome(t *testing.T, pool *pgxpool.Pool, id int64) string {
	t.Helper()
	return scalar[string](t, pool, `SELECT status || ' ' || coalesce(outcome, '-') || ' ' || coalesce(outcome_type, '-') || ' ' ||
		coalesce(outcome_code, '-') FROM herald.status($1)`, id)
}

// SendGrid's signed Event Webhook: each event kind moves its message to its outcome;
// hard bounces, spam reports and unsubscribes suppress the recipient; a replay
// changes nothing; a wrong key, a tampered body, an old timestamp and a malformed
// batch get 401/400 and store nothing; unknown messages are counted and acknowledged.
func TestSendGridEventWebhook(t *testing.T) {
	_, pool := setup(t)
	mustExec(t, pool, `SELECT herald.create_consumer_group('receipts', 1, 'latest')`)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	pub, err := events.ParseSendGridKey(base64.StdEncoding.EncodeToString(der))
	if err != nil {
		t.Fatal(err)
	}
	subuser, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader) // a second account's key (a subuser)
	base := eventsServer(t, pool, func(string) events.Config {
		return events.Config{SendGridKeys: []*ecdsa.PublicKey{&subuser.PublicKey, pub}}
	})

	rcpts := []string{"ana@example.com", "Bo@Example.com", "cy@example.com", "di@example.com", "ed@example.com", "fa@example.com", "gi@example.com"}
	ids := sentMessages(t, pool, "email", "sgid-", rcpts...)
	ev := func(i int, kind, extra string) string {
		return fmt.Sprintf(`{"email":%q,"timestamp":%d,"event":%q,"sg_event_id":"ev-%d-%s","sg_message_id":"sgid-%d.filterdrecv-5d4","herald_id":"%d"%s}`,
			strings.ToLower(rcpts[i]), time.Now().Unix(), kind, i, kind, ids[i], ids[i], extra)
	}
	batch := "[" + strings.Join([]string{
		ev(0, "processed", ""), ev(0, "delivered", `,"response":"250 OK"`), ev(0, "open", ""),
		ev(1, "bounce", `,"type":"bounce","status":"5.1.1","reason":"550 5.1.1 no such user"`),
		ev(2, "bounce", `,"type":"blocked","status":"4.0.0","reason":"blocked for now"`),
		ev(3, "spamreport", ""), ev(4, "unsubscribe", ""), ev(5, "dropped", `,"reason":"Bounced Address"`),
		ev(6, "dropped", `,"reason":"Invalid SMTPAPI header"`),
		`{"event":"delivered","sg_event_id":"ev-unknown","sg_message_id":"nope.1","herald_id":"999999","timestamp":1}`,
		fmt.Sprintf(`{"event":"delivered","sg_event_id":"ev-mismatch","sg_message_id":"other-id.1","herald_id":"%d","timestamp":1}`, ids[5]),
	}, ",") + "]"
	post := func(body string, signWith *ecdsa.PrivateKey, ts int64, sent string) (int, eventsResult) {
		t.Helper()
		var res eventsResult
		code := do(t, "POST", base+"/v1/events/sendgrid", "application/json", sent, sendGridHeaders(signWith, ts, body), &res)
		return code, res
	}
	stored := func() int64 { return scalar[int64](t, pool, `SELECT count(*) FROM herald.delivery_events`) }

	// Attacks first: nothing may be stored.
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if code, _ := post(batch, other, time.Now().Unix(), batch); code != 401 {
		t.Fatalf("signed with another key: %d", code)
	}
	if code, _ := post(batch, key, time.Now().Unix(), strings.Replace(batch, `"bounce"`, `"delivered"`, 1)); code != 401 {
		t.Fatalf("tampered body: %d", code)
	}
	if code, _ := post(batch, key, time.Now().Add(-10*time.Minute).Unix(), batch); code != 401 {
		t.Fatalf("a ten-minute-old timestamp: %d", code)
	}
	if code, _ := post("[{", key, time.Now().Unix(), "[{"); code != 400 {
		t.Fatalf("malformed batch: %d", code)
	}
	if n := stored(); n != 0 {
		t.Fatalf("%d events stored by refused requests", n)
	}

	code, res := post(batch, key, time.Now().Unix(), batch)
	// processed of a message already sent tells nothing new (a duplicate); open is no outcome.
	if code != 200 || res.Recorded != 7 || res.Unknown != 2 || res.Ignored != 1 || res.Duplicates != 1 {
		t.Fatalf("batch: %d %+v", code, res)
	}
	for i, want := range []string{"sent delivered - -", "sent bounced hard 5.1.1", "sent bounced soft 4.0.0",
		"sent complained - -", "sent unsubscribed - -", "sent bounced hard -", "sent undelivered - -"} {
		if got := outcome(t, pool, ids[i]); got != want {
			t.Errorf("message %d: %q, want %q", i, got, want)
		}
	}
	sup := scalar[string](t, pool, `SELECT string_agg(recipient || ':' || reason || ':' || source, ' ' ORDER BY recipient) FROM herald.suppressions`)
	// A drop of an address on SendGrid's own bounce list is that bounce again; another drop is not.
	if sup != "bo@example.com:bounced:sendgrid di@example.com:complained:sendgrid ed@example.com:unsubscribed:sendgrid fa@example.com:bounced:sendgrid" {
		t.Fatalf("suppressions: %s", sup)
	}
	kinds := scalar[string](t, pool, `SELECT string_agg(kind, ',' ORDER BY message_id, kind) FROM herald.log_read('receipts', 0, 100)
		WHERE kind NOT IN ('accepted', 'sent')`)
	if kinds != "delivered,bounced,bounced,complained,unsubscribed,bounced,undelivered" {
		t.Fatalf("receipts in the log: %s", kinds)
	}
	mustExec(t, pool, `SELECT herald.log_ack('receipts', 0, (SELECT max("offset") FROM herald.log_read('receipts', 0, 100)))`)

	// A replay changes nothing twice (this one signed by the second account's key).
	before := scalar[string](t, pool, `SELECT string_agg(outcome || outcome_at::text, ',' ORDER BY id) FROM herald.messages`)
	code, res = post(batch, subuser, time.Now().Unix(), batch)
	if code != 200 || res.Duplicates != 10 || res.Recorded != 0 || res.Unknown != 0 {
		t.Fatalf("replay: %d %+v", code, res)
	}
	if after := scalar[string](t, pool, `SELECT string_agg(outcome || outcome_at::text, ',' ORDER BY id) FROM herald.messages`); after != before {
		t.Fatalf("a replay changed outcomes")
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.log_read('receipts', 0, 100)`); n != 0 {
		t.Fatalf("a replay appended %d log events", n)
	}
	// A lesser event after a graver one does not hide it: delivered after the complaint.
	code, _ = post("["+ev(3, "delivered", "")+"]", key, time.Now().Unix(), "["+ev(3, "delivered", "")+"]")
	if got := outcome(t, pool, ids[3]); code != 200 || got != "sent complained - -" {
		t.Fatalf("delivered after complained: %d %s", code, got)
	}

	// SendGrid reports each recipient of a message, its copies too, with the message's
	// herald_id: a copy's hard bounce suppresses the copy's address, never the To's,
	// and is not the message's outcome.
	withCopies := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'Hal@Example.com', '{"subject":"s","text":"t","cc":["Kim@Example.com"],"bcc":["lu@example.com"]}')`)
	mustExec(t, pool, `SELECT herald.complete(ARRAY[m.id], ARRAY[m.lease_token], ARRAY['sgid-copies'])
		FROM herald.claim_batch('w', 10, channels => ARRAY['email']) AS m`)
	copyEvents := "[" + strings.Join([]string{
		fmt.Sprintf(`{"email":"kim@example.com","timestamp":%d,"event":"bounce","type":"bounce","status":"5.1.1","sg_event_id":"copy-1","sg_message_id":"sgid-copies.filterdrecv-1","herald_id":"%d"}`, time.Now().Unix(), withCopies),
		fmt.Sprintf(`{"email":"lu@example.com","timestamp":%d,"event":"spamreport","sg_event_id":"copy-2","sg_message_id":"sgid-copies.filterdrecv-1","herald_id":"%d"}`, time.Now().Unix(), withCopies),
		fmt.Sprintf(`{"email":"stranger@example.com","timestamp":%d,"event":"bounce","type":"bounce","status":"5.1.1","sg_event_id":"copy-3","sg_message_id":"sgid-copies.filterdrecv-1","herald_id":"%d"}`, time.Now().Unix(), withCopies),
	}, ",") + "]"
	if code, res := post(copyEvents, key, time.Now().Unix(), copyEvents); code != 200 || res.Recorded != 2 || res.Unknown != 1 {
		t.Fatalf("copies' events: %d %+v", code, res)
	}
	if got := outcome(t, pool, withCopies); got != "sent - - -" {
		t.Fatalf("a copy's bounce became the message's outcome: %s", got)
	}
	if sup := scalar[string](t, pool, `SELECT string_agg(recipient || ':' || reason, ' ' ORDER BY recipient) FROM herald.suppressions
		WHERE recipient IN ('hal@example.com', 'kim@example.com', 'lu@example.com', 'stranger@example.com')`); sup != "kim@example.com:bounced lu@example.com:complained" {
		t.Fatalf("suppressions after the copies' events: %s (the To stays, an address the message never went to is not added)", sup)
	}

	// SendGrid posts a batch every 30 seconds or when it reaches 768 KB: thousands of
	// events, all of them recorded (a refused batch is retried for a day, then lost).
	var big []string
	for i := 0; len(strings.Join(big, ",")) < 760<<10; i++ {
		big = append(big, fmt.Sprintf(`{"email":"ana@example.com","timestamp":%d,"event":"delivered","sg_event_id":"full-%d","sg_message_id":"sgid-%d.filterdrecv-5d4","herald_id":"%d","response":"250 OK"}`,
			time.Now().Unix(), i, ids[0], ids[0]))
	}
	full := "[" + strings.Join(big, ",") + "]"
	if code, res := post(full, key, time.Now().Unix(), full); code != 200 || res.Recorded != len(big) || len(big) <= 1000 {
		t.Fatalf("a 768 KB batch of %d events: %d %+v", len(big), code, res)
	}
}

// Twilio's status callbacks: signed with the auth token over the callback URL (with
// the herald_id the sender adds) and the sorted parameters; delivered and
// undelivered (with Twilio's ErrorCode) are outcomes, queued and sent are not; a bad
// signature is 401; an ErrorCode that rules the number out suppresses it. Two
// accounts post here (a channel of its own sends with the second): each one's
// callbacks verify with its own token.
func TestTwilioStatusCallbacks(t *testing.T) {
	_, pool := setup(t)
	callback := eventsServer(t, pool, func(base string) events.Config {
		return events.Config{TwilioAuthTokens: []string{"tw-token", "tw-token-2"}, TwilioURL: base + "/v1/events/twilio"}
	}) + "/v1/events/twilio"
	ids := sentMessages(t, pool, "sms", "SM", "+14155550100", "+14155550101", "+14155550102")

	post := func(id int64, status, errorCode, token string) (int, eventsResult) {
		t.Helper()
		u := fmt.Sprintf("%s?herald_id=%d", callback, id)
		form := url.Values{"MessageSid": {fmt.Sprintf("SM%d", id)}, "MessageStatus": {status}, "AccountSid": {"AC0123"},
			"To": {"+14155550100"}, "From": {"+15005550006"}, "ApiVersion": {"2010-04-01"}}
		if errorCode != "" {
			form.Set("ErrorCode", errorCode)
		}
		code, b := postTwilio(t, u, form, token)
		var res eventsResult
		if code == 200 {
			if err := json.Unmarshal(b, &res); err != nil {
				t.Fatalf("answer %q: %v", b, err)
			}
		}
		return code, res
	}
	if code, _ := post(ids[0], "delivered", "", "wrong-token"); code != 401 {
		t.Fatalf("bad signature: %d", code)
	}
	// sent: Twilio has the message, which herald already knew (a duplicate).
	if code, res := post(ids[0], "sent", "", "tw-token"); code != 200 || res.Duplicates != 1 || outcome(t, pool, ids[0]) != "sent - - -" {
		t.Fatalf("sent: %d %+v", code, res)
	}
	if code, res := post(ids[0], "delivered", "", "tw-token"); code != 200 || res.Recorded != 1 {
		t.Fatalf("delivered: %d %+v", code, res)
	}
	if code, res := post(ids[1], "undelivered", "30003", "tw-token"); code != 200 || res.Recorded != 1 {
		t.Fatalf("undelivered: %d %+v", code, res)
	}
	if got := outcome(t, pool, ids[0]) + " / " + outcome(t, pool, ids[1]); got != "sent delivered - - / sent undelivered - 30003" {
		t.Fatalf("outcomes: %s", got)
	}
	if code, res := post(ids[1], "undelivered", "30003", "tw-token"); code != 200 || res.Duplicates != 1 {
		t.Fatalf("replayed callback: %d %+v", code, res)
	}
	// 30005, an unknown number, rules the number out; 30003 (a phone off) does not.
	if code, res := post(ids[2], "undelivered", "30005", "tw-token-2"); code != 200 || res.Recorded != 1 {
		t.Fatalf("undelivered 30005: %d %+v", code, res)
	}
	if sup := scalar[string](t, pool, `SELECT string_agg(recipient || ':' || reason || ':' || source, ' ') FROM herald.suppressions`); sup != "+14155550102:bounced:twilio" {
		t.Fatalf("suppressions: %q", sup)
	}
}

// The generic endpoint: Standard Webhooks signature, herald's own event objects;
// a bad field is 400 naming it and stores nothing.
func TestGenericDeliveryEvents(t *testing.T) {
	_, pool := setup(t)
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a generic event secret, 32 bytes"))
	var counted []string // what herald run adds to herald_delivery_events_received_total
	base := eventsServer(t, pool, func(string) events.Config {
		return events.Config{GenericSecrets: []string{secret}, Counted: func(source string, counts map[string]int) {
			counted = append(counted, source+fmt.Sprint(counts))
		}}
	})
	ids := sentMessages(t, pool, "email", "mta-", "ana@example.com")
	key, _ := webhook.DecodeSecret(secret)
	post := func(body string, k []byte) (int, eventsResult) {
		ts := time.Now().Unix()
		var res eventsResult
		code := do(t, "POST", base+"/v1/events/generic", "application/json", body, map[string]string{
			webhook.HeaderID: "evt_1", webhook.HeaderTimestamp: strconv.FormatInt(ts, 10),
			webhook.HeaderSignature: webhook.Sign(k, "evt_1", ts, []byte(body))}, &res)
		return code, res
	}
	good := fmt.Sprintf(`[{"event_id":"dsn-1","message_id":%d,"event":"bounced","type":"hard","code":"5.1.1","reason":"user unknown"}]`, ids[0])
	if code, _ := post(good, []byte("another key, also thirty-two bytes!")); code != 401 {
		t.Fatalf("wrong secret: %d", code)
	}
	if code, res := post(strings.Replace(good, `"hard"`, `"sticky"`, 1), key); code != 400 || res.Field != "events[0].type" {
		t.Fatalf("bad type: %d %+v", code, res)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.delivery_events`); n != 0 {
		t.Fatalf("%d events stored by refused requests", n)
	}
	if code, res := post(good, key); code != 200 || res.Recorded != 1 {
		t.Fatalf("good: %d %+v", code, res)
	}
	if got := outcome(t, pool, ids[0]); got != "sent bounced hard 5.1.1" {
		t.Fatalf("outcome: %s", got)
	}
	if fmt.Sprint(counted) != "[genericmap[bounced:1]]" {
		t.Fatalf("counted %v, want the one recorded bounce (refused requests count nothing)", counted)
	}
	if !scalar[bool](t, pool, `SELECT herald.is_suppressed('email', 'ANA@example.com')`) {
		t.Fatal("a hard bounce did not suppress the recipient")
	}
	// The outcome over HTTP (GET /v1/messages/{id} answers intake.GetStatus) and in
	// the CLI.
	st, err := intake.GetStatus(t.Context(), pool, ids[0])
	if err != nil || st.Outcome == nil || *st.Outcome != "bounced" || *st.OutcomeType != "hard" || *st.OutcomeCode != "5.1.1" {
		t.Fatalf("GetStatus: %+v %v", st, err)
	}
	// Retention: purge takes the events with the messages.
	defer func() {
		mustExec(t, pool, `SELECT herald.purge('1 hour', now => now() + interval '2 hours')`)
		if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.delivery_events`); n != 0 {
			t.Fatalf("purge left %d delivery events", n)
		}
	}()
	cmd := exec.Command(buildHerald(t), "status", strconv.FormatInt(ids[0], 10))
	cmd.Env = append(os.Environ(), "DATABASE_URL="+pool.Config().ConnString())
	out, err := cmd.CombinedOutput()
	if err != nil || !regexp.MustCompile(`outcome\s+bounced\n`).Match(out) || !regexp.MustCompile(`outcome_code\s+5\.1\.1\n`).Match(out) {
		t.Fatalf("herald status: %v\n%s", err, out)
	}
}

// The suppression list: an entry stops the messages of its recipient at enqueue and
// at claim (also when it arrives while a message waits), never fails the producer's
// call, is case-insensitive for e-mail, may expire, and imports with COPY.
func TestSuppressionList(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `SELECT herald.create_consumer_group('audit', 1, 'latest')`)
	if n := scalar[int32](t, pool, `SELECT herald.suppress('email', ARRAY['Ana@Example.com', 'ana@example.com'], 'unsubscribed')`); n != 1 {
		t.Fatalf("suppress added %d", n)
	}
	a := enqueueEmail(t, pool, "ana@EXAMPLE.com")
	b := enqueueEmail(t, pool, "bo@example.com")
	if got := scalar[string](t, pool, `SELECT string_agg(status, ',' ORDER BY id) FROM herald.messages`); got != "suppressed,queued" {
		t.Fatalf("at enqueue: %s", got)
	}
	// One waiting for its time when the suppression arrives.
	c := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'cy@example.com', '{"subject":"s","text":"t"}', run_at => $1::timestamptz + interval '1 hour', now => $1)`, t0)
	mustExec(t, pool, `SELECT herald.suppress('email', ARRAY['cy@example.com'])`)
	got := claim(t, pool, 10, t0.Add(2*time.Hour))
	if len(got) != 1 || got[0].ID != b {
		t.Fatalf("claim handed out %+v, want only %d", got, b)
	}
	if s := scalar[string](t, pool, `SELECT status || ' ' || (finished_at IS NOT NULL)::text FROM herald.messages WHERE id = $1`, c); s != "suppressed true" {
		t.Fatalf("waiting message: %s", s)
	}
	suppressed := scalar[[]int64](t, pool, `SELECT array_agg(message_id ORDER BY message_id) FROM herald.log_read('audit', 0, 100) WHERE kind = 'suppressed'`)
	if len(suppressed) != 2 || suppressed[0] != a || suppressed[1] != c {
		t.Fatalf("suppressed events for %v, want %d and %d", suppressed, a, c)
	}
	// A producer may ask, not change the list.
	producer := loginPool(t, pool, "suppression_producer", "herald_producer")
	if !scalar[bool](t, producer, `SELECT herald.is_suppressed('email', 'CY@example.com')`) ||
		scalar[bool](t, producer, `SELECT herald.is_suppressed('email', 'bo@example.com')`) {
		t.Fatal("is_suppressed answers wrong")
	}
	_, err := producer.Exec(ctx, `SELECT herald.suppress('email', ARRAY['bo@example.com'])`)
	wantPgError(t, err, "42501", "")
	// An expired entry no longer applies; unsuppress removes one.
	mustExec(t, pool, `SELECT herald.suppress('email', ARRAY['bo@example.com'], expires_at => now() - interval '1 second')`)
	mustExec(t, pool, `SELECT herald.unsuppress('email', ARRAY['ANA@example.com'])`)
	for _, to := range []string{"bo@example.com", "ana@example.com"} {
		id := scalar[int64](t, pool, `SELECT herald.enqueue('email', $1, '{"subject":"s","text":"t"}')`, to)
		if s := scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, id); s != "queued" {
			t.Fatalf("%s after its entry expired or went: %s", to, s)
		}
	}
	// COPY: mixed case is stored normalised.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Conn().PgConn().CopyFrom(ctx, strings.NewReader("email\tDi@Example.COM\tbounced\timport\nsms\t+14155550199\tunsubscribed\timport\n"),
		`COPY herald.suppressions (kind, recipient, reason, source) FROM STDIN`); err != nil {
		t.Fatal(err)
	}
	if !scalar[bool](t, pool, `SELECT herald.is_suppressed('email', 'di@example.com') AND herald.is_suppressed('sms', '+14155550199')`) {
		t.Fatal("COPYed entries do not apply")
	}
	_, err = pool.Exec(ctx, `SELECT herald.suppress('fax', ARRAY['x'])`)
	wantPgError(t, err, "22V12", "kind")
}

// A batch with suppressed recipients and an idempotency repeat: the suppressed ones
// are stored 'suppressed' and finished, the repeat is answered with the first id and
// stored once, and the log holds one 'accepted' row of the stored ids and one
// 'suppressed' row of the suppressed ones, both in id order. Every check of the list,
// at enqueue and at claim, probes suppressions_pkey per message (a list of thousands
// is not read whole), also under the generic plan.
func TestSuppressedInABatch(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.suppressions (kind, recipient, reason)
		SELECT 'email', 'gone' || g || '@example.com', 'bounced' FROM generate_series(1, 5000) g`)
	mustExec(t, pool, `ANALYZE herald.suppressions`)
	conn, notices := explainConn(t, pool)
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	if err := conn.QueryRow(ctx, `SELECT herald.enqueue_many(
			array_fill('email'::text, ARRAY[5]),
			ARRAY['a@example.com', 'GONE1@example.com', 'b@example.com', 'gone2@example.com', 'GONE1@example.com'],
			array_fill('{"subject":"s","text":"t"}'::jsonb, ARRAY[5]),
			idempotency_keys => ARRAY[NULL, 'k', NULL, NULL, 'k'])`).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 5 || ids[4] != ids[1] {
		t.Fatalf("ids %v: want five, the repeat answered with the first", ids)
	}
	if got := scalar[string](t, pool, `SELECT string_agg(status || ':' || (finished_at IS NOT NULL)::text, ',' ORDER BY id) FROM herald.messages`); got != "queued:false,suppressed:true,queued:false,suppressed:true" {
		t.Fatalf("stored %s", got)
	}
	logged := scalar[string](t, pool, `SELECT string_agg(kind || '=' || message_ids::text, ' ' ORDER BY seq) FROM herald.log_statements`)
	if want := fmt.Sprintf("accepted={%d,%d,%d,%d} suppressed={%d,%d}", ids[0], ids[1], ids[2], ids[3], ids[1], ids[3]); logged != want {
		t.Fatalf("log %s, want %s", logged, want)
	}
	plan := planOf(t, *notices, "herald._suppression(")
	if !strings.Contains(plan, "Index Scan using suppressions_pkey") || strings.Contains(plan, "Seq Scan on suppressions") {
		t.Fatalf("enqueue does not probe suppressions_pkey:\n%s", plan)
	}
	// At claim: b's recipient is suppressed after it was stored.
	mustExec(t, pool, `SELECT herald.suppress('email', ARRAY['b@example.com'])`)
	*notices = nil
	var claimed []int64
	if err := conn.QueryRow(ctx, `SELECT array_agg(id) FROM herald.claim_batch('w', 10)`).Scan(&claimed); err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 1 || claimed[0] != ids[0] {
		t.Fatalf("claimed %v, want only %d", claimed, ids[0])
	}
	plan = planOf(t, *notices, "herald._suppression(")
	if !strings.Contains(plan, "Index Scan using suppressions_pkey") || strings.Contains(plan, "Seq Scan on suppressions") {
		t.Fatalf("claim_batch does not probe suppressions_pkey:\n%s", plan)
	}
}

// A suppressed address gets no copy either: claim_batch hands out an e-mail's payload
// without the cc and bcc addresses on the suppression list (in any letter case; an
// emptied list is gone), so no runner can send to them, and the SMTP server is never
// asked for them; the stored payload keeps what the producer asked. Other kinds'
// payloads are not e-mail and are handed out as stored.
func TestSuppressedCopiesAreNotSent(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook')`)
	asked := `{"subject":"s","text":"t","cc":["bo@example.com","cy@example.com"],"bcc":["BO@Example.com"]}`
	before := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'ana@example.com', $1::jsonb)`, asked)
	mustExec(t, pool, `SELECT herald.suppress('email', ARRAY['bo@example.com'], 'unsubscribed')`)
	after := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'dee@example.com', $1::jsonb)`, asked)
	hook := scalar[int64](t, pool, `SELECT herald.enqueue('hooks', 'https://hooks.example.com/x', '{"cc":["bo@example.com"]}')`)
	rows, err := pool.Query(ctx, `SELECT id, recipient, payload FROM herald.claim_batch('w', 10)`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]sender.Message{}
	for rows.Next() {
		var m sender.Message
		if err := rows.Scan(&m.ID, &m.Recipient, &m.Payload); err != nil {
			t.Fatal(err)
		}
		got[m.ID] = m
	}
	if rows.Err() != nil || len(got) != 3 {
		t.Fatalf("claimed %d: %v", len(got), rows.Err())
	}
	for _, id := range []int64{before, after} {
		if p := string(got[id].Payload); p != `{"cc": ["cy@example.com"], "text": "t", "subject": "s"}` {
			t.Fatalf("message %d handed out with %s", id, p)
		}
	}
	if p := string(got[hook].Payload); p != `{"cc": ["bo@example.com"]}` {
		t.Fatalf("a webhook's payload was changed: %s", p)
	}
	if p := scalar[string](t, pool, `SELECT payload::text FROM herald.messages WHERE id = $1`, after); !strings.Contains(p, "BO@Example.com") {
		t.Fatalf("the stored payload lost what was asked: %s", p)
	}
	srv := sendertest.StartSMTP(t, true)
	s, err := smtpsender.New(sendertest.SMTPConfig(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := got[before]
	m.Channel, m.Attempt = "email", 1
	if _, err := s.Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	if rcpts := strings.Join(srv.Rcpts(), " "); rcpts != "ana@example.com cy@example.com" {
		t.Fatalf("the SMTP server was asked for %s", rcpts)
	}
}

// End to end with a real runner, a SendGrid sender and signed events: a hard bounce
// suppresses the recipient and the next message to it ends suppressed with no request
// to the provider; an unsubscribe that arrives while a message waits stops it; a
// message that expires behind a paused channel is never sent and its event is in the
// log.
func TestBouncesUnsubscribesAndExpiryStopSends(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	mustExec(t, pool, `SELECT herald.create_consumer_group('audit', 1, 'latest')`)
	prov, sg := sendGridStandIn(t, "noreply@example.com", false)
	startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": sg}, PollInterval: 50 * time.Millisecond,
		ReapInterval: 50 * time.Millisecond})
	send := func(to string, extra string) int64 {
		return scalar[int64](t, pool, `SELECT herald.enqueue('email', $1, '{"subject":"s","text":"t"}'`+extra+`)`, to)
	}
	status := func(id int64) string {
		return scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, id)
	}
	waitFor := func(id int64, want string) {
		t.Helper()
		eventually(t, 20*time.Second, fmt.Sprintf("message %d %s", id, want), func() bool { return status(id) == want })
	}
	record := func(id int64, event string) {
		mustExec(t, pool, `SELECT herald.record_delivery_events('generic', jsonb_build_array(jsonb_build_object(
			'event_id', $2::text || '-' || $1::bigint, 'message_id', $1::bigint, 'event', $2::text)))`, id, event)
	}

	bounced := send("bo@example.com", "")
	waitFor(bounced, "sent")
	record(bounced, "bounced") // type defaults to hard
	again := send("Bo@Example.com", "")
	if s := status(again); s != "suppressed" {
		t.Fatalf("after a hard bounce: %s", s)
	}

	cy := send("cy@example.com", "")
	waitFor(cy, "sent")
	waiting := send("cy@example.com", ", run_at => now() + interval '1 second'")
	record(cy, "unsubscribed")
	waitFor(waiting, "suppressed")

	mustExec(t, pool, `SELECT herald.pause_channel('email', 'test: hold the queue')`)
	late := send("di@example.com", ", expires_at => now() + interval '300 milliseconds'")
	waitFor(late, "expired")
	mustExec(t, pool, `SELECT herald.resume_channel('email')`)
	marker := send("ed@example.com", "")
	waitFor(marker, "sent")
	if n := prov.sends.Load(); n != 3 {
		t.Fatalf("the provider got %d sends, want 3 (bo, cy, ed)", n)
	}
	kinds := scalar[string](t, pool, `SELECT string_agg(kind || ':' || message_id, ',' ORDER BY "offset")
		FROM herald.log_read('audit', 0, 1000) WHERE kind IN ('bounced', 'unsubscribed', 'suppressed', 'expired')`)
	want := fmt.Sprintf("bounced:%d,suppressed:%d,unsubscribed:%d,suppressed:%d,expired:%d", bounced, again, cy, waiting, late)
	if kinds != want {
		t.Fatalf("log: %s, want %s", kinds, want)
	}
}

// examples/events/sendgrid.sh and twilio.sh, the scripts docs/operations.md gives for
// trying the endpoints by hand, sign as the providers do: herald accepts what they
// post.
func TestEventScriptsSignAsProviders(t *testing.T) {
	_, pool := setup(t)
	dir := t.TempDir()
	script := func(name string, env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(testdb.RepoRoot(), "examples", "events", name), args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	pubKey := script("sendgrid.sh", nil, "keygen")
	key, err := events.ParseSendGridKey(pubKey)
	if err != nil {
		t.Fatalf("the key sendgrid.sh printed: %v", err)
	}
	base := eventsServer(t, pool, func(base string) events.Config {
		return events.Config{SendGridKeys: []*ecdsa.PublicKey{key}, TwilioAuthTokens: []string{"tw-token"}, TwilioURL: base + "/v1/events/twilio"}
	})
	mail := sentMessages(t, pool, "email", "sg-", "ana@example.com")
	sms := sentMessages(t, pool, "sms", "SM", "+14155550100")

	batch := filepath.Join(dir, "batch.json")
	os.WriteFile(batch, []byte(fmt.Sprintf(`[{"event":"delivered","sg_event_id":"by-hand-1","sg_message_id":"sg-%d.x","herald_id":"%d","timestamp":%d}]`,
		mail[0], mail[0], time.Now().Unix())), 0o644)
	if out := script("sendgrid.sh", nil, base+"/v1/events/sendgrid", batch); !strings.Contains(out, `"recorded":1`) {
		t.Fatalf("sendgrid.sh: %s", out)
	}
	out := script("twilio.sh", []string{"TWILIO_AUTH_TOKEN=tw-token"}, fmt.Sprintf("%s/v1/events/twilio?herald_id=%d", base, sms[0]),
		fmt.Sprintf("MessageSid=SM%d", sms[0]), "MessageStatus=undelivered", "ErrorCode=30003", "To=+14155550100")
	if !strings.Contains(out, `"recorded":1`) {
		t.Fatalf("twilio.sh: %s", out)
	}
	if got := outcome(t, pool, mail[0]) + " / " + outcome(t, pool, sms[0]); got != "sent delivered - - / sent undelivered - 30003" {
		t.Fatalf("outcomes: %s", got)
	}
}

// An event names the address it is about: the message's recipient (in any letter case
// for e-mail) sets the outcome and is logged; a cc or bcc copy's only suppresses the
// copy; any other address is unknown and suppresses nothing, also where a non-e-mail
// payload happens to carry a "cc" field or another channel's recipient is named.
func TestDeliveryEventsOfCopies(t *testing.T) {
	_, pool := setup(t)
	mustExec(t, pool, `SELECT herald.create_consumer_group('receipts', 1, 'latest')`)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook')`)
	mail := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"s","text":"t","cc":["Bo@Example.com"],"bcc":["cy@example.com"]}')`)
	text := scalar[int64](t, pool, `SELECT herald.enqueue('sms', '+15005550006', '{"text":"t"}')`)
	hook := scalar[int64](t, pool, `SELECT herald.enqueue('hooks', 'https://hooks.example.com/x', '{"cc":["victim@example.com"]}')`)
	mustExec(t, pool, `SELECT herald.complete(array_agg(id ORDER BY id), array_agg(lease_token ORDER BY id)) FROM herald.claim_batch('w', 10)`)
	evs := fmt.Sprintf(`[
		{"event_id":"1","message_id":%[1]d,"recipient":"bo@example.com","event":"bounced","code":"5.1.1"},
		{"event_id":"2","message_id":%[1]d,"recipient":"CY@example.com","event":"unsubscribed"},
		{"event_id":"3","message_id":%[1]d,"recipient":"dee@example.com","event":"complained"},
		{"event_id":"4","message_id":%[2]d,"recipient":"+15005550009","event":"undelivered","code":"30005"},
		{"event_id":"5","message_id":%[3]d,"recipient":"victim@example.com","event":"bounced"}]`, mail, text, hook)
	if res := scalar[string](t, pool, `SELECT row(r.*)::text FROM herald.record_delivery_events('generic', $1::jsonb) AS r`, evs); res != "(2,0,3)" {
		t.Fatalf("copies and strangers: (recorded, duplicates, unknown) = %s, want (2,0,3)", res)
	}
	for _, id := range []int64{mail, text, hook} {
		if got := outcome(t, pool, id); got != "sent - - -" {
			t.Fatalf("message %d: a copy's or a stranger's event became the outcome: %s", id, got)
		}
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.log_read('receipts', 0, 100) WHERE kind NOT IN ('accepted', 'sent')`); n != 0 {
		t.Fatalf("%d copies' events in the log, which tells of messages", n)
	}
	sup := func() string {
		return scalar[string](t, pool, `SELECT coalesce(string_agg(kind || ':' || recipient || ':' || reason, ' ' ORDER BY recipient), '') FROM herald.suppressions`)
	}
	if got := sup(); got != "email:bo@example.com:bounced email:cy@example.com:unsubscribed" {
		t.Fatalf("suppressions: %q (only the copies; not the To, not an address the message never went to)", got)
	}
	own := fmt.Sprintf(`[{"event_id":"6","message_id":%d,"recipient":"ANA@Example.com","event":"bounced","code":"5.1.1"},
		{"event_id":"7","message_id":%d,"recipient":"+15005550006","event":"undelivered","code":"30005"}]`, mail, text)
	if res := scalar[string](t, pool, `SELECT row(r.*)::text FROM herald.record_delivery_events('generic', $1::jsonb) AS r`, own); res != "(2,0,0)" {
		t.Fatalf("the messages' own events: %s", res)
	}
	if got := outcome(t, pool, mail) + " / " + outcome(t, pool, text); got != "sent bounced hard 5.1.1 / sent undelivered - 30005" {
		t.Fatalf("outcomes: %s", got)
	}
	if got := sup(); got != "sms:+15005550006:bounced email:ana@example.com:bounced email:bo@example.com:bounced email:cy@example.com:unsubscribed" {
		t.Fatalf("suppressions: %q", got)
	}
	if kinds := scalar[string](t, pool, `SELECT string_agg(kind, ',' ORDER BY message_id) FROM herald.log_read('receipts', 0, 100)
		WHERE kind NOT IN ('accepted', 'sent')`); kinds != "bounced,undelivered" {
		t.Fatalf("receipts in the log: %s", kinds)
	}
}

// herald.record_delivery_events refuses a batch with any bad event, naming the first
// bad event's field (22V18), and stores nothing of it; a good 'at' is kept as given.
func TestDeliveryEventsRefusedNameTheField(t *testing.T) {
	ctx, pool := setup(t)
	ids := sentMessages(t, pool, "email", "mta-", "ana@example.com")
	good := fmt.Sprintf(`{"event_id":"e-1","message_id":%d,"event":"delivered","at":"2026-01-02T03:04:05Z"}`, ids[0])
	for _, c := range []struct{ events, field string }{
		{`{"event_id":"e-1","event":"delivered"}`, "events"},
		{`[]`, "events"},
		{`[` + good + `, 7]`, "events[1]"},
		{`[` + good + `, {"event_id":"e-2","event":"delivered","colour":"red","zebra":1}]`, "events[1].colour"},
		{`[` + good + `, {"event_id":"e-2","event":"delivered","at":"yesterday-ish"}]`, "events[1].at"},
		{`[` + good + `, {"event_id":"e-2","event":"delivered","at":12}]`, "events[1].at"},
		// the first bad event is named, whatever its fault and whatever comes later
		{`[{"event_id":"e-2","event":"delivered","colour":"red"}, {"event_id":"e-3","event":"delivered","at":"not a time"}]`, "events[0].colour"},
		{`[{"event_id":"e-2","event":"sent"}, {"event_id":"e-3","event":"delivered","at":"not a time"}]`, "events[0].event"},
		{`[{"event_id":"","event":"delivered"}]`, "events[0].event_id"},
		{`[{"event":"delivered"}]`, "events[0].event_id"},
		{`[{"event_id":"e-2","event":"delivered","message_id":"12"}]`, "events[0].message_id"},
		{`[{"event_id":"e-2","event":"delivered","code":5}]`, "events[0].code"},
		{`[{"event_id":"e-2","event":"delivered","code":"` + strings.Repeat("x", 65) + `"}]`, "events[0].code"},
		{`[{"event_id":"e-2","event":"delivered","type":"hard"}]`, "events[0].type"},
		{`[{"event_id":"e-2","event":"delivered","recipient":["ana@example.com"]}]`, "events[0].recipient"},
		{`[{"event_id":"e-2","event":"delivered","recipient":""}]`, "events[0].recipient"},
		{`[{"event_id":"e-2","event":"delivered","recipient":"` + strings.Repeat("a", 309) + `@example.com"}]`, "events[0].recipient"},
	} {
		_, err := pool.Exec(ctx, `SELECT herald.record_delivery_events('generic', $1::jsonb)`, c.events)
		wantPgError(t, err, "22V18", c.field)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.delivery_events`); n != 0 {
		t.Fatalf("%d events stored by refused calls", n)
	}
	_, err := pool.Exec(ctx, `SELECT herald.record_delivery_events('Generic', $1::jsonb)`, `[`+good+`]`)
	wantPgError(t, err, "22V12", "source")

	mustExec(t, pool, `SELECT herald.record_delivery_events('generic', $1::jsonb)`, `[`+good+`]`)
	if at := scalar[string](t, pool, `SELECT to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') FROM herald.delivery_events`); at != "2026-01-02 03:04:05" {
		t.Fatalf("at stored as %s", at)
	}
}

// One call with several events for one message, an unknown message and a replay:
// the counts, the gravest outcome, the receipts in the log (one row per event name,
// in message id order), and one suppression for the complaint.
func TestDeliveryEventsBatch(t *testing.T) {
	ctx, pool := setup(t)
	ids := sentMessages(t, pool, "email", "mta-", "ana@example.com", "bo@example.com")
	batch := fmt.Sprintf(`[
		{"event_id":"b-1","message_id":%[2]d,"event":"delivered"},
		{"event_id":"a-1","message_id":%[1]d,"event":"delivered"},
		{"event_id":"a-2","message_id":%[1]d,"event":"complained"},
		{"event_id":"a-3","message_id":%[1]d,"event":"deferred"},
		{"event_id":"x-1","message_id":999999,"event":"bounced"},
		{"event_id":"b-1","message_id":%[2]d,"event":"delivered"}]`, ids[0], ids[1])
	var recorded, duplicates, unknown int
	if err := pool.QueryRow(ctx, `SELECT * FROM herald.record_delivery_events('generic', $1::jsonb)`, batch).
		Scan(&recorded, &duplicates, &unknown); err != nil {
		t.Fatal(err)
	}
	if recorded != 4 || duplicates != 1 || unknown != 1 {
		t.Fatalf("recorded %d, duplicates %d, unknown %d; want 4, 1, 1", recorded, duplicates, unknown)
	}
	if got := outcome(t, pool, ids[0]); !strings.HasPrefix(got, "sent complained") {
		t.Fatalf("ana's outcome: %s", got)
	}
	if got := outcome(t, pool, ids[1]); !strings.HasPrefix(got, "sent delivered") {
		t.Fatalf("bo's outcome: %s", got)
	}
	got := scalar[string](t, pool, `SELECT string_agg(s.kind || ':' || u.id, ' ' ORDER BY s.kind, u.i)
		FROM herald.log_statements s, unnest(s.message_ids) WITH ORDINALITY AS u (id, i)
		WHERE s.kind IN ('delivered', 'complained', 'deferred', 'bounced')`)
	if want := fmt.Sprintf("complained:%[1]d deferred:%[1]d delivered:%[1]d delivered:%[2]d", ids[0], ids[1]); got != want {
		t.Fatalf("receipts %q, want %q", got, want)
	}
	if got := scalar[string](t, pool, `SELECT string_agg(kind || ' ' || recipient || ' ' || reason, ',') FROM herald.suppressions`); got != "email ana@example.com complained" {
		t.Fatalf("suppressions: %s", got)
	}
	// A replay of the whole batch changes nothing.
	if err := pool.QueryRow(ctx, `SELECT * FROM herald.record_delivery_events('generic', $1::jsonb)`, batch).
		Scan(&recorded, &duplicates, &unknown); err != nil || recorded != 0 || duplicates != 6 || unknown != 0 {
		t.Fatalf("replay: recorded %d, duplicates %d, unknown %d, %v", recorded, duplicates, unknown, err)
	}
}

// postTwilio posts form to u as Twilio does, signed with token, and returns the
// status and the body of the answer.
func postTwilio(t *testing.T, u string, form url.Values, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Twilio-Signature", events.TwilioSignature(token, u, form))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// Messages recipients send to a Twilio number keep the suppression list in step with
// Twilio's own opt-outs: STOP (and its synonyms, or Twilio's OptOutType with custom
// keywords) suppresses the sender, START lifts that and nothing else (a bounce
// stays); other texts change nothing; a bad signature is 401 and changes nothing. A
// STOP on WhatsApp (From whatsapp:+…) suppresses the number, as herald keeps it; one
// from a channel without numbers (messenger:…) is stored nowhere.
func TestTwilioInboundOptOuts(t *testing.T) {
	_, pool := setup(t)
	inbound := eventsServer(t, pool, func(base string) events.Config {
		return events.Config{TwilioAuthTokens: []string{"tw-token"}, TwilioInboundURL: base + "/v1/events/twilio-inbound"}
	}) + "/v1/events/twilio-inbound"
	post := func(from, body, optOutType, token string) int {
		t.Helper()
		form := url.Values{"MessageSid": {"SM1"}, "AccountSid": {"AC0123"}, "From": {from}, "To": {"+15005550006"}, "Body": {body}}
		if optOutType != "" {
			form.Set("OptOutType", optOutType)
		}
		code, b := postTwilio(t, inbound, form, token)
		if code == 200 && !strings.Contains(string(b), "<Response>") {
			t.Fatalf("answer %q is not TwiML", b)
		}
		return code
	}
	list := func() string {
		return scalar[string](t, pool, `SELECT coalesce(string_agg(recipient || ':' || reason || ':' || source, ' ' ORDER BY recipient), '') FROM herald.suppressions`)
	}
	if code := post("+14155550100", "STOP", "", "wrong-token"); code != 401 || list() != "" {
		t.Fatalf("forged STOP: %d, list %q", code, list())
	}
	mustExec(t, pool, `SELECT herald.suppress('sms', '{+14155550102}', 'bounced', 'twilio')`)
	for _, m := range []struct{ from, body, optOutType string }{
		{"+14155550100", " stop ", ""},
		{"+14155550101", "ARRET", "STOP"},
		{"+14155550103", "Stop texting me", ""},
		{"+14155550102", "START", ""},
		{"whatsapp:+14155550104", "STOP", ""},
		{"messenger:1234567890", "STOP", ""},
	} {
		if code := post(m.from, m.body, m.optOutType, "tw-token"); code != 200 {
			t.Fatalf("%+v: %d", m, code)
		}
	}
	if got := list(); got != "+14155550100:unsubscribed:twilio +14155550101:unsubscribed:twilio +14155550102:bounced:twilio +14155550104:unsubscribed:twilio" {
		t.Fatalf("after STOPs: %q", got)
	}
	if id := scalar[int64](t, pool, `SELECT herald.enqueue('sms', '+14155550100', '{"text":"hi"}')`); scalar[string](t, pool,
		`SELECT status FROM herald.messages WHERE id = $1`, id) != "suppressed" {
		t.Fatal("a message to a number that texted STOP was not suppressed")
	}
	for _, body := range []string{"unstop", "START"} { // the second finds nothing to lift
		if code := post("+14155550100", body, "", "tw-token"); code != 200 {
			t.Fatalf("%s: %d", body, code)
		}
	}
	if got := list(); got != "+14155550101:unsubscribed:twilio +14155550102:bounced:twilio +14155550104:unsubscribed:twilio" {
		t.Fatalf("after START: %q", got)
	}
	again := scalar[int64](t, pool, `SELECT herald.enqueue('sms', '+14155550100', '{"text":"hi again"}')`)
	if st := scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, again); st != "queued" {
		t.Fatalf("after START: %s", st)
	}
}

// rawRequest writes a request's head to addr declaring a body of length bytes, with
// Expect: 100-continue, and no body; it returns the connection (the request in
// progress) and a reader of the first status line the server answers: 100 Continue
// once the handler reads the body, or its refusal.
func rawRequest(t *testing.T, addr, path string, length int) (net.Conn, func() string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n",
		path, addr, length)
	return c, func() string {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		return strings.TrimSpace(line)
	}
}

// Attack on the public endpoints: anyone can post to them (providers must), so
// requests with large bodies, sent slowly, could hold the runner's memory without
// bound. The bodies in progress are bounded together (HERALD_EVENTS_MAX_IN_FLIGHT_BYTES):
// with two requests declaring the largest body and sending none of it, a third is
// answered 503 with Retry-After at once, its body never read; a body declared past
// the limit is 413 unread. Once the slow requests are gone, a provider's callback
// is recorded.
func TestEventsEndpointsBoundTheBodiesInProgress(t *testing.T) {
	_, pool := setup(t)
	base := eventsServer(t, pool, func(base string) events.Config {
		return events.Config{TwilioAuthTokens: []string{"tw-token"}, TwilioURL: base + "/v1/events/twilio",
			MaxBodyBytes: 64 << 10, MaxInFlightBytes: 128 << 10}
	})
	callback := base + "/v1/events/twilio"
	ids := sentMessages(t, pool, "sms", "SM", "+14155550100")
	addr := strings.TrimPrefix(base, "http://")
	var slow []net.Conn
	for range 2 { // each holds its room once the handler asks for its body
		c, status := rawRequest(t, addr, "/v1/events/twilio", 64<<10)
		if s := status(); s != "HTTP/1.1 100 Continue" {
			t.Fatalf("a request within the room: %q, want its body asked for", s)
		}
		slow = append(slow, c)
	}
	if _, status := rawRequest(t, addr, "/v1/events/twilio", 64<<10); status() != "HTTP/1.1 503 Service Unavailable" {
		t.Fatal("a third request was not refused before its body while the two hold the room")
	}
	if _, status := rawRequest(t, addr, "/v1/events/twilio", 1<<20); status() != "HTTP/1.1 413 Request Entity Too Large" {
		t.Fatal("a body declared past the limit was not refused before it was sent")
	}
	for _, c := range slow {
		c.Close()
	}
	u := fmt.Sprintf("%s?herald_id=%d", callback, ids[0])
	form := url.Values{"MessageSid": {fmt.Sprintf("SM%d", ids[0])}, "MessageStatus": {"delivered"}, "AccountSid": {"AC0123"}}
	eventually(t, 10*time.Second, "the provider's callback recorded once the slow requests left", func() bool {
		code, _ := postTwilio(t, u, form, "tw-token")
		return code == 200
	})
	if got := outcome(t, pool, ids[0]); got != "sent delivered - -" {
		t.Fatalf("the callback's outcome: %s", got)
	}
}

// SendGrid's processed event, signed as SendGrid signs, settles a send in doubt: the
// message waiting for its retry after a lost answer ends sent with the send's
// X-Message-Id (sg_message_id's first part, what the sender would have stored), and
// a later delivered event of the same send, with SendGrid's suffix, still matches it.
func TestSendGridProcessedSettlesASendInDoubt(t *testing.T) {
	_, pool := setup(t)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	base := eventsServer(t, pool, func(string) events.Config { return events.Config{SendGridKeys: []*ecdsa.PublicKey{&key.PublicKey}} })
	id := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"s","text":"t"}', now => $1)`, t0)
	c := claim(t, pool, 1, t0)
	mustExec(t, pool, `SELECT herald.fail($1::bigint, $2::bigint, 'no answer', 'transient', NULL, 'in_doubt', $3)`, id, c[0].Token, t0)
	post := func(kind string) eventsResult {
		t.Helper()
		body := fmt.Sprintf(`[{"email":"ana@example.com","timestamp":%d,"event":%q,"sg_event_id":"ev-%s","sg_message_id":"x-msg-1.filterdrecv-5d4-1","herald_id":"%d"}]`,
			time.Now().Unix(), kind, kind, id)
		var res eventsResult
		if code := do(t, "POST", base+"/v1/events/sendgrid", "application/json", body, sendGridHeaders(key, time.Now().Unix(), body), &res); code != 200 {
			t.Fatalf("%s: %d", kind, code)
		}
		return res
	}
	if res := post("processed"); res.Recorded != 1 {
		t.Fatalf("processed: %+v", res)
	}
	if got := scalar[string](t, pool, `SELECT status || ' ' || provider_message_id FROM herald.messages WHERE id = $1`, id); got != "sent x-msg-1" {
		t.Fatalf("after SendGrid's processed: %s, want sent x-msg-1", got)
	}
	if res := post("delivered"); res.Recorded != 1 || outcome(t, pool, id) != "sent delivered - -" {
		t.Fatalf("delivered: %+v, %s", res, outcome(t, pool, id))
	}
	if n := len(claim(t, pool, 10, t0.Add(24*time.Hour))); n != 0 {
		t.Fatalf("the settled message was claimed again (%d)", n)
	}
}
