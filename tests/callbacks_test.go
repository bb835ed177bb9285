// Status callbacks: what happens to a producer's messages goes back to the producer
// as signed webhooks (herald.producers.callback_url, herald.dispatch_callbacks), and
// what a callback must not carry, reach or skip.
package tests

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald/herald/runner"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/webhook"
	"github.com/herald/herald/tests/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

// callback is one status callback as the receiver reads its payload.
type callback struct {
	Event          string         `json:"event"`
	Offset         int64          `json:"offset"`
	At             time.Time      `json:"at"`
	IdempotencyKey *string        `json:"idempotency_key"`
	Message        map[string]any `json:"message"`
}

// callbacksTo gives producer (an SQL expression: a quoted name, or current_user) status
// callbacks to url on a webhook channel "callbacks" open to the callbacks' owner alone.
func callbacksTo(t *testing.T, pool *pgxpool.Pool, producer, url string) {
	t.Helper()
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, producers) VALUES ('callbacks', 'webhook', '{herald:callbacks}')`)
	mustExec(t, pool, `INSERT INTO herald.producers (producer, callback_url, callback_channel) VALUES (`+producer+`, $1, 'callbacks')`, url)
}

// dispatch calls herald.dispatch_callbacks once and returns (events, callbacks, set_aside).
func dispatch(t *testing.T, pool *pgxpool.Pool) [3]int {
	t.Helper()
	var r [3]int
	if err := pool.QueryRow(context.Background(), `SELECT events, callbacks, set_aside FROM herald.dispatch_callbacks()`).
		Scan(&r[0], &r[1], &r[2]); err != nil {
		t.Fatal(err)
	}
	return r
}

// queuedCallbacks returns the callback messages, in id order, with their recipients.
func queuedCallbacks(t *testing.T, pool *pgxpool.Pool) (cbs []callback, recipients []string, raw []string) {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT recipient, payload::text FROM herald.messages
		WHERE producer = 'herald:callbacks' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var rcpt, body string
		if err := rows.Scan(&rcpt, &body); err != nil {
			t.Fatal(err)
		}
		var cb callback
		if err := json.Unmarshal([]byte(body), &cb); err != nil {
			t.Fatal(err)
		}
		cbs, recipients, raw = append(cbs, cb), append(recipients, rcpt), append(raw, body)
	}
	return cbs, recipients, raw
}

// A shop's messages are sent, die and are delivered; each of those events is called
// back to the shop's URL once, in log order, carrying what herald.status would show
// the shop. Attacks: the callback must not carry the provider's error text, the
// recipient or the payload; another producer's messages are not called back to the
// shop; the callbacks' own events are not called back (no loop).
func TestCallbacksCarryWhatTheProducerMaySee(t *testing.T) {
	ctx, pool := setup(t)
	shop := loginPool(t, pool, "herald_test_cb_shop", "herald_producer")
	other := loginPool(t, pool, "herald_test_cb_other", "herald_producer")
	callbacksTo(t, pool, "'herald_test_cb_shop'", "https://shop.example.com/herald")

	var sent, dead int64
	if err := shop.QueryRow(ctx, `SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"Order 77","text":"secret-body"}',
		idempotency_key => 'order-77')`).Scan(&sent); err != nil {
		t.Fatal(err)
	}
	if err := shop.QueryRow(ctx, `SELECT herald.enqueue('email', 'nobody@example.com', '{"subject":"Hi","text":"Hello"}')`).Scan(&dead); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(ctx, `SELECT herald.enqueue('email', 'bo@example.com', '{"subject":"Hi","text":"Hello"}')`); err != nil {
		t.Fatal(err)
	}
	cs := claim(t, pool, 10, time.Now())
	if len(cs) != 3 {
		t.Fatalf("claimed %d, want 3", len(cs))
	}
	for _, c := range cs {
		if c.ID == dead {
			mustExec(t, pool, `SELECT herald.fail($1::bigint, $2::bigint, '550 5.1.1 <nobody@example.com>: provider-secret-text', 'permanent', error_code => '550')`, c.ID, c.Token)
		} else {
			mustExec(t, pool, `SELECT herald.complete($1::bigint, $2::bigint, $3::text)`, c.ID, c.Token, fmt.Sprintf("pm-%d", c.ID))
		}
	}
	mustExec(t, pool, `SELECT herald.record_delivery_events('generic', jsonb_build_array(jsonb_build_object(
		'event_id', 'e1', 'message_id', $1::bigint, 'event', 'delivered', 'code', '250')))`, sent)

	if got := dispatch(t, pool); got[1] != 3 || got[2] != 0 {
		t.Fatalf("dispatch_callbacks = %v, want 3 callbacks of the shop's sent, dead and delivered", got)
	}
	cbs, rcpts, raw := queuedCallbacks(t, pool)
	var got []string
	for i, cb := range cbs {
		got = append(got, fmt.Sprintf("%s %v %s", cb.Event, cb.Message["message_id"], cb.Message["status"]))
		if rcpts[i] != "https://shop.example.com/herald" {
			t.Fatalf("callback %d went to %s", i, rcpts[i])
		}
		if i > 0 && cb.Offset <= cbs[i-1].Offset {
			t.Fatalf("callbacks out of log order: %v", raw)
		}
		for _, leak := range []string{"provider-secret-text", "nobody@example.com", "ana@example.com", "secret-body", "Order 77", "herald_test_cb_other"} {
			if strings.Contains(raw[i], leak) {
				t.Fatalf("callback %d carries %q: %s", i, leak, raw[i])
			}
		}
	}
	want := []string{
		fmt.Sprintf("sent %d sent", sent), fmt.Sprintf("dead %d dead", dead), fmt.Sprintf("delivered %d sent", sent),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("callbacks %v, want %v", got, want)
	}
	if cbs[0].IdempotencyKey == nil || *cbs[0].IdempotencyKey != "order-77" || cbs[1].IdempotencyKey != nil {
		t.Fatalf("idempotency keys: %s", raw)
	}
	if cbs[1].Message["last_error_class"] != "permanent" || cbs[1].Message["last_error_code"] != "550" {
		t.Fatalf("the dead message's callback: %s", raw[1])
	}
	if cbs[2].Message["outcome"] != "delivered" || cbs[0].Message["provider_message_id"] != fmt.Sprintf("pm-%d", sent) {
		t.Fatalf("receipt and outcome: %s", raw)
	}
	// One message's callbacks go out in order: the second waits for the first.
	if n := countWhere(t, pool, `producer = 'herald:callbacks' AND status = 'held'`); n != 1 {
		t.Fatalf("%d callbacks held behind their message's earlier one, want 1 (delivered behind sent)", n)
	}
	// The shop can neither read nor cancel its callbacks as messages: they are herald's.
	cbID := scalar[int64](t, pool, `SELECT min(id) FROM herald.messages WHERE producer = 'herald:callbacks'`)
	if n := scalar[int64](t, shop, `SELECT count(*) FROM herald.status($1)`, cbID); n != 0 {
		t.Fatal("the shop read a callback message's status")
	}
	if s := scalar[*string](t, shop, `SELECT herald.cancel($1)`, cbID); s != nil {
		t.Fatalf("the shop's cancel of a callback answered %q", *s)
	}

	// The callbacks are sent; their own events call nothing back, and nothing read is read again.
	for {
		cs := claim(t, pool, 10, time.Now())
		if len(cs) == 0 {
			break
		}
		for _, c := range cs {
			mustExec(t, pool, `SELECT herald.complete($1::bigint, $2::bigint)`, c.ID, c.Token)
		}
	}
	if got := dispatch(t, pool); got[1] != 0 {
		t.Fatalf("the callbacks' own events were called back: %v", got)
	}
	if n := countWhere(t, pool, `producer = 'herald:callbacks'`); n != 3 {
		t.Fatalf("%d callback messages, want 3", n)
	}
}

// callback_events chooses the events; accepted and deferred are left out by default.
func TestCallbackEventsChosenByTheAdmin(t *testing.T) {
	_, pool := setup(t)
	callbacksTo(t, pool, "current_user", "https://shop.example.com/herald")
	id := enqueueNow(t, pool, "ana@example.com")
	mustExec(t, pool, `SELECT herald.cancel($1)`, id)
	mustExec(t, pool, `SELECT herald.record_delivery_events('generic', jsonb_build_array(jsonb_build_object(
		'event_id', 'd1', 'message_id', $1::bigint, 'event', 'deferred')))`, id)
	dispatch(t, pool)
	mustExec(t, pool, `UPDATE herald.producers SET callback_events = '{accepted}' WHERE producer = current_user`)
	enqueueNow(t, pool, "bo@example.com")
	mustExec(t, pool, `SELECT herald.cancel(max(id)) FROM herald.messages WHERE recipient = 'bo@example.com'`)
	dispatch(t, pool)
	cbs, _, raw := queuedCallbacks(t, pool)
	var got []string
	for _, cb := range cbs {
		got = append(got, cb.Event)
	}
	if fmt.Sprint(got) != "[cancelled accepted]" {
		t.Fatalf("events called back %v, want [cancelled accepted] (default: no accepted, no deferred; then only accepted): %s", got, raw)
	}
}

// Settings a callback could not go out with are refused when they are written,
// with the column named, and change nothing. Attacks: a callback URL inside the
// network (the cloud metadata address, a private host), a channel closed to the
// callbacks, or a producer that tries to write its own settings.
func TestCallbackSettingsRefused(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, producers) VALUES ('callbacks', 'webhook', '{herald:callbacks}')`)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, producers) VALUES ('closed', 'webhook', '{billing}')`)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, producers, recipient_prefixes)
		VALUES ('partners', 'webhook', '{herald:callbacks}', '{https://partner.example.com/}')`)
	// Attack: a channel other producers may enqueue on would let them send signed
	// "callbacks" to any producer's URL.
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('shared', 'webhook')`)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, producers) VALUES ('mixed', 'webhook', '{herald:callbacks,billing}')`)
	for _, c := range []struct{ url, channel, events, code, field string }{
		{"http://169.254.169.254/latest/meta-data/", "callbacks", "", "22V02", "callback_url"},
		{"http://10.1.2.3/hook", "callbacks", "", "22V02", "callback_url"},
		{"ftp://shop.example.com/", "callbacks", "", "22V02", "callback_url"},
		{"https://shop.example.com/", "email", "", "22V01", "callback_channel"},
		{"https://shop.example.com/", "nope", "", "22V01", "callback_channel"},
		{"https://shop.example.com/", "closed", "", "42501", "callback_channel"},
		{"https://shop.example.com/", "shared", "", "42501", "callback_channel"},
		{"https://shop.example.com/", "mixed", "", "42501", "callback_channel"},
		{"https://shop.example.com/", "partners", "", "42501", "callback_url"},
		{"https://shop.example.com/", "", "", "22V12", "callback_channel"},
		{"https://shop.example.com/", "callbacks", "{sent,opened}", "22V12", "callback_events"},
		{"https://shop.example.com/", "callbacks", "{}", "22V12", "callback_events"},
	} {
		_, err := pool.Exec(ctx, `INSERT INTO herald.producers (producer, callback_url, callback_channel, callback_events)
			VALUES ('shop', $1, nullif($2, ''), nullif($3, '')::text[])`, c.url, c.channel, c.events)
		wantPgError(t, err, c.code, c.field)
	}
	_, err := pool.Exec(ctx, `INSERT INTO herald.producers (producer, callback_url, callback_channel)
		VALUES ('herald:callbacks', 'https://shop.example.com/', 'callbacks')`)
	wantPgError(t, err, "22V12", "callback_url")
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.producers`); n != 0 {
		t.Fatalf("%d producer rows stored by refused settings", n)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.consumer_groups`); n != 0 {
		t.Fatal("a refused setting created the callbacks' consumer group")
	}
	shop := loginPool(t, pool, "herald_test_cb_shop", "herald_producer")
	_, err = shop.Exec(ctx, `INSERT INTO herald.producers (producer, callback_url, callback_channel)
		VALUES ('herald_test_cb_shop', 'https://evil.example.com/', 'callbacks')`)
	wantPgError(t, err, "42501", "")
}

// The callbacks' consumer group exists while some producer has a callback_url,
// starts at the log's end (earlier events are not called back), and is herald's
// own: a consumer can neither read nor acknowledge it (attack: a consumer that acks
// it would skip every producer's callbacks).
func TestCallbacksGroupIsHeraldsOwn(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, producers) VALUES ('callbacks', 'webhook', '{herald:callbacks}')`)
	before := enqueueNow(t, pool, "ana@example.com")
	mustExec(t, pool, `SELECT herald.cancel($1)`, before)
	mustExec(t, pool, `SELECT herald.log_sequence()`)
	if got := dispatch(t, pool); got != [3]int{} {
		t.Fatalf("dispatch without callbacks configured = %v", got)
	}
	mustExec(t, pool, `INSERT INTO herald.producers (producer, callback_url, callback_channel)
		VALUES (current_user, 'https://shop.example.com/herald', 'callbacks')`)
	after := enqueueNow(t, pool, "bo@example.com")
	mustExec(t, pool, `SELECT herald.cancel($1)`, after)
	if got := dispatch(t, pool); got[1] != 1 {
		t.Fatalf("dispatch = %v, want 1 callback (the cancel after the setting)", got)
	}
	consumer := loginPool(t, pool, "herald_test_cb_consumer", "herald_consumer")
	for _, q := range []string{
		`SELECT herald.create_consumer_group('herald.callbacks')`,
		`SELECT count(*) FROM herald.log_read('herald.callbacks', 0)`,
		`SELECT herald.log_ack('herald.callbacks', 0, 1000000)`,
		`SELECT herald.log_dead_letter('herald.callbacks', 0, 1, 'skip')`,
	} {
		_, err := consumer.Exec(ctx, q)
		wantPgError(t, err, "22V12", "group")
	}
	mustExec(t, pool, `UPDATE herald.producers SET callback_url = NULL, callback_channel = NULL`)
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.consumer_groups`); n != 0 {
		t.Fatal("the callbacks' group outlived the last callback_url")
	}
}

// A producer's callbacks that its channel no longer takes (an admin opened the channel
// to another producer after the setting: that producer could forge callbacks) are set
// aside with the reason, and the other producers' callbacks go out; nothing is read
// twice.
func TestRefusedCallbacksSetAside(t *testing.T) {
	ctx, pool := setup(t)
	a := loginPool(t, pool, "herald_test_cb_a", "herald_producer")
	b := loginPool(t, pool, "herald_test_cb_b", "herald_producer")
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, producers) VALUES ('cb_a', 'webhook', '{herald:callbacks}'), ('cb_b', 'webhook', '{herald:callbacks}')`)
	mustExec(t, pool, `INSERT INTO herald.producers (producer, callback_url, callback_channel) VALUES
		('herald_test_cb_a', 'https://a.example.com/cb', 'cb_a'), ('herald_test_cb_b', 'https://b.example.com/cb', 'cb_b')`)
	for _, p := range []*pgxpool.Pool{a, b, a} {
		if _, err := p.Exec(ctx, `SELECT herald.cancel(herald.enqueue('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}'))`); err != nil {
			t.Fatal(err)
		}
	}
	mustExec(t, pool, `UPDATE herald.channels SET producers = '{herald:callbacks,billing}' WHERE name = 'cb_a'`)
	if got := dispatch(t, pool); got != [3]int{6, 1, 2} {
		t.Fatalf("dispatch = %v, want 6 events read, b's 1 callback queued, a's 2 set aside", got)
	}
	if n := countWhere(t, pool, `producer = 'herald:callbacks' AND recipient = 'https://b.example.com/cb'`); n != 1 {
		t.Fatalf("b's callbacks queued: %d", n)
	}
	reasons := scalar[string](t, pool, `SELECT string_agg(kind || ': ' || error, ' | ' ORDER BY "offset")
		FROM herald.consumer_dead_letters WHERE group_name = 'herald.callbacks'`)
	if strings.Count(reasons, "cancelled: callback to producer herald_test_cb_a refused: callback_channel: channel 'cb_a' must be open to 'herald:callbacks' alone") != 2 {
		t.Fatalf("set aside: %s", reasons)
	}
	if got := dispatch(t, pool); got[1] != 0 || got[2] != 0 {
		t.Fatalf("a second dispatch = %v, want no callback (only the callback's own accepted event to read)", got)
	}
	// Sent again while the channel still refuses them: the error, and nothing changes.
	_, err := pool.Exec(ctx, `SELECT herald.redispatch_callbacks()`)
	wantPgError(t, err, "42501", "callback_channel")
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.consumer_dead_letters`); n != 2 {
		t.Fatalf("%d dead letters after a refused redispatch, want 2", n)
	}
	// The admin opens the channel again: the set-aside callbacks go out, in order, once.
	mustExec(t, pool, `UPDATE herald.channels SET producers = '{herald:callbacks}' WHERE name = 'cb_a'`)
	if n := scalar[int](t, pool, `SELECT herald.redispatch_callbacks()`); n != 2 {
		t.Fatalf("redispatched %d, want 2", n)
	}
	if n := scalar[int](t, pool, `SELECT herald.redispatch_callbacks()`); n != 0 {
		t.Fatalf("a second redispatch sent %d again", n)
	}
	if got := scalar[string](t, pool, `SELECT string_agg(payload->>'event', ',' ORDER BY id) FROM herald.messages
		WHERE producer = 'herald:callbacks' AND recipient = 'https://a.example.com/cb'`); got != "cancelled,cancelled" {
		t.Fatalf("a's callbacks after the redispatch: %s", got)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.consumer_dead_letters`); n != 0 {
		t.Fatalf("%d dead letters left after the redispatch", n)
	}
	// A producer may not redispatch (it is the admin's repair).
	_, err = a.Exec(ctx, `SELECT herald.redispatch_callbacks()`)
	wantPgError(t, err, "42501", "")
}

// With the last callback_url removed, the callbacks' group stays while it holds
// set-aside events, so they are not lost with it.
func TestCallbacksGroupKeepsItsDeadLetters(t *testing.T) {
	_, pool := setup(t)
	callbacksTo(t, pool, "current_user", "https://shop.example.com/herald")
	mustExec(t, pool, `SELECT herald.cancel(herald.enqueue('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}'))`)
	mustExec(t, pool, `UPDATE herald.channels SET recipient_prefixes = '{https://elsewhere.example.com/}' WHERE name = 'callbacks'`)
	if got := dispatch(t, pool); got[2] != 1 {
		t.Fatalf("dispatch = %v, want the cancel set aside", got)
	}
	mustExec(t, pool, `UPDATE herald.producers SET callback_url = NULL, callback_channel = NULL`)
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.consumer_dead_letters WHERE group_name = 'herald.callbacks'`); n != 1 {
		t.Fatalf("%d dead letters left after the callbacks were switched off, want 1", n)
	}
}

// Runners dispatch at once: every event is called back exactly once.
func TestConcurrentDispatchCallsBackEachEventOnce(t *testing.T) {
	ctx, pool := setup(t)
	callbacksTo(t, pool, "current_user", "https://shop.example.com/herald")
	const n = 3000
	mustExec(t, pool, `SELECT herald.cancel(id) FROM unnest(herald.enqueue_many(array_fill('email'::text, ARRAY[$1::int]),
		array_fill('ana@example.com'::text, ARRAY[$1::int]), array_fill('{"subject":"Hi","text":"Hello"}'::jsonb, ARRAY[$1::int]))) AS id`, n)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500 && countWhere(t, pool, `producer = 'herald:callbacks'`) < n; i++ { // bounded: a broken dispatch fails below
				if _, err := pool.Exec(ctx, `SELECT herald.dispatch_callbacks(200)`); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for { // what is left to read is the callbacks' own events
		got := dispatch(t, pool)
		if got[1] != 0 || got[2] != 0 {
			t.Fatalf("left to dispatch: %v", got)
		}
		if got[0] < 1000 {
			break
		}
	}
	dups := scalar[int64](t, pool, `SELECT count(*) - count(DISTINCT payload->'offset') FROM herald.messages WHERE producer = 'herald:callbacks'`)
	msgs := scalar[int64](t, pool, `SELECT count(DISTINCT (payload->'message'->>'message_id')) FROM herald.messages WHERE producer = 'herald:callbacks'`)
	if dups != 0 || msgs != n {
		t.Fatalf("%d duplicate callbacks, %d messages called back (want 0, %d)", dups, msgs, n)
	}
}

// End to end through `herald run`: the runner dispatches callbacks and delivers them
// as webhooks signed with the channel's Ed25519 key (whsk_), which the receiver
// verifies with the public key alone, in order: sent, then the provider's delivered.
func TestCallbacksEndToEnd(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	signingKey := "whsk_" + base64.StdEncoding.EncodeToString([]byte("a callbacks signing seed: 32 B..")) // a 32-byte seed
	publicKey, err := webhook.PublicKey(signingKey)
	if err != nil {
		t.Fatal(err)
	}
	type arrival struct {
		id   string
		body callbackEnvelope
	}
	var mu sync.Mutex
	var got []arrival
	var base string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if webhook.Verify([]string{publicKey}, r.Header, body, 5*time.Minute, time.Now()) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var env callbackEnvelope
		if err := json.Unmarshal(body, &env); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, arrival{r.Header.Get(webhook.HeaderID), env})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	base = strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	callbacksTo(t, pool, "current_user", base+"/herald")
	cmd, logs := runnerProcess(t, url, "HERALD_SENDER_EMAIL=noop", "HERALD_SENDER_CALLBACKS=webhook",
		"HERALD_CALLBACKS_WEBHOOK_SECRETS="+signingKey,
		"HERALD_WEBHOOK_ALLOW=127.0.0.1/32,::1/128", "HERALD_POLL_INTERVAL=100ms")
	id := enqueueNow(t, pool, "ana@example.com")
	arrived := func(n int) bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= n
	}
	eventually(t, 30*time.Second, "the sent callback", func() bool { return arrived(1) })
	mustExec(t, pool, `SELECT herald.record_delivery_events('generic', jsonb_build_array(jsonb_build_object(
		'event_id', 'e1', 'message_id', $1::bigint, 'event', 'delivered')))`, id)
	eventually(t, 30*time.Second, "the delivered callback", func() bool { return arrived(2) })
	waitExit(t, cmd, logs, 15*time.Second)
	mu.Lock()
	defer mu.Unlock()
	var seen []string
	for _, a := range got {
		seen = append(seen, fmt.Sprintf("%s %v", a.body.Payload.Event, a.body.Payload.Message["message_id"]))
		if a.body.Recipient != base+"/herald" || a.body.Channel != "callbacks" {
			t.Fatalf("envelope: %+v", a.body)
		}
	}
	if want := fmt.Sprintf("[sent %d delivered %d]", id, id); fmt.Sprint(seen) != want {
		t.Fatalf("callbacks arrived %v, want %s\n%s", seen, want, logs.String())
	}
}

// callbackEnvelope is the body of the webhook a callback goes out as.
type callbackEnvelope struct {
	ID        int64    `json:"id"`
	Channel   string   `json:"channel"`
	Recipient string   `json:"recipient"`
	Payload   callback `json:"payload"`
	Attempt   int      `json:"attempt"`
}

// The runner's herald_log_consumer_lag_offsets gauge follows herald.consumer_lag per
// group, the callbacks' own among them, so an alert sees callbacks (or any consumer)
// falling behind.
func TestLogLagGauge(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, producers) VALUES ('callbacks', 'webhook', '{herald:callbacks}')`)
	mustExec(t, pool, `SELECT herald.create_consumer_group('audit')`)
	mustExec(t, pool, `INSERT INTO herald.producers (producer, callback_url, callback_channel)
		VALUES ('someone', 'https://shop.example.com/herald', 'callbacks')`)
	for range 3 {
		enqueueNow(t, pool, "ana@example.com") // no sender serves e-mail here: nothing is claimed
	}
	r, stop := startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"sms": newRecorder()},
		PollInterval: 50 * time.Millisecond, StatsInterval: 50 * time.Millisecond})
	defer stop()
	lagOf := func(group string) float64 {
		for _, m := range scrape(t, r.Handler())["herald_log_consumer_lag_offsets"].GetMetric() {
			if labelsAre(m, "group", group) {
				return m.GetGauge().GetValue()
			}
		}
		return -1
	}
	eventually(t, 10*time.Second, "audit 3 behind, the callbacks' group caught up", func() bool {
		return lagOf("audit") == 3 && lagOf("herald.callbacks") == 0
	})
	mustExec(t, pool, `SELECT herald.log_ack('audit', 0, 3)`)
	eventually(t, 10*time.Second, "audit caught up", func() bool { return lagOf("audit") == 0 })
}
