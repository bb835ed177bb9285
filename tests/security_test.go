package tests

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"net/mail"
	"net/smtp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald/herald/runner/intake"
	"github.com/herald/herald/runner/sender/egress"
	"github.com/herald/herald/runner/sender/sendertest"
	"github.com/herald/herald/tests/testdb"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const otp = `'{"subject":"s","text":"t"}'`

// Attack: a producer reads another producer's message by guessing its id (ids are a
// sequence), and reads a receiver's response body out of the failure. Neither works:
// another producer's id is "not found", and the owner sees the class and code only.
func TestProducersSeeOnlyTheirOwnMessages(t *testing.T) {
	ctx, pool := setup(t)
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	mallory := loginPool(t, pool, "herald_test_mallory", "herald_producer")

	id := scalar[int64](t, alice, `SELECT herald.enqueue('email', 'a@example.com', `+otp+`)`)
	c := claim(t, pool, 1, time.Now().Add(time.Second))
	mustExec(t, pool, `SELECT herald.fail($1::bigint, $2::bigint, 'HTTP 404: INTERNAL-SECRET-token=abc123', 'transient', error_code => '404')`,
		id, c[0].Token)

	if n := scalar[int64](t, mallory, `SELECT count(*) FROM herald.status($1)`, id); n != 0 {
		t.Fatalf("another producer read the status of message %d", id)
	}
	rows, err := alice.Query(ctx, `SELECT * FROM herald.status($1)`, id)
	if err != nil {
		t.Fatal(err)
	}
	all, err := pgx.CollectRows(rows, pgx.RowToMap)
	if err != nil || len(all) != 1 {
		t.Fatalf("the owner's status: %v %v", all, err)
	}
	if fmt.Sprint(all[0]["last_error_code"]) != "404" || fmt.Sprint(all[0]["last_error_class"]) != "transient" {
		t.Fatalf("the owner should see the class and code: %v", all[0])
	}
	for k, v := range all[0] {
		if strings.Contains(fmt.Sprint(v), "SECRET") {
			t.Fatalf("status column %s shows the receiver's answer to a producer: %v", k, v)
		}
	}
	// The admin sees every message, and the full text stays in the error history.
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.status($1)`, id); n != 1 {
		t.Fatal("the admin does not see the message")
	}
	if e := scalar[string](t, pool, `SELECT errors->0->>'error' FROM herald.messages WHERE id = $1`, id); !strings.Contains(e, "SECRET") {
		t.Fatalf("error history lost the text: %q", e)
	}
	// Producers have no other way in.
	if _, err := mallory.Exec(ctx, `SELECT count(*) FROM herald.messages`); err == nil {
		t.Fatal("a producer read herald.messages")
	}
	if _, err := mallory.Exec(ctx, `SELECT count(*) FROM herald.dead_letters`); err == nil {
		t.Fatal("a producer read herald.dead_letters")
	}
}

// Attack: a producer that knows (or guesses) another producer's idempotency key
// enqueues under it, to learn the other message's id or to have its own message
// silently dropped. Keys are per producer: both messages are stored, a repeat by the
// same producer still returns the first id — also with 8 connections of each at once.
func TestIdempotencyKeysArePerProducer(t *testing.T) {
	ctx, pool := setup(t)
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	bob := loginPool(t, pool, "herald_test_bob", "herald_producer")

	var wg sync.WaitGroup
	got := map[string][]int64{}
	var mu sync.Mutex
	for _, p := range []struct {
		name string
		pool *pgxpool.Pool
	}{{"alice", alice}, {"bob", bob}} {
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var id int64
				err := p.pool.QueryRow(ctx, `SELECT herald.enqueue('email', 'a@example.com', `+otp+`, idempotency_key => 'order-42')`).Scan(&id)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[p.name] = append(got[p.name], id)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	for name, ids := range got {
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("%s got different ids for one key: %v", name, ids)
			}
		}
	}
	if got["alice"][0] == got["bob"][0] {
		t.Fatalf("two producers share message %d through one key", got["alice"][0])
	}
	rows := scalar[string](t, pool, `SELECT string_agg(producer, ',' ORDER BY producer) FROM herald.messages WHERE idempotency_key = 'order-42'`)
	if rows != "herald_test_alice,herald_test_bob" {
		t.Fatalf("stored under order-42: %s", rows)
	}
	// Each sees its own message, not the other's.
	if n := scalar[int64](t, bob, `SELECT count(*) FROM herald.status($1)`, got["alice"][0]); n != 0 {
		t.Fatal("bob reads alice's message")
	}
	// The batch paths scope keys the same way.
	ids := scalar[[]int64](t, bob, `SELECT herald.enqueue_batch('[{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"idempotency_key":"order-42"}]')`)
	if ids[0] != got["bob"][0] {
		t.Fatalf("bob's batch repeat got %d, want %d", ids[0], got["bob"][0])
	}
	ids = scalar[[]int64](t, pool, `SELECT herald.enqueue_many('{email}', '{a@example.com}', ARRAY[`+otp+`::jsonb], idempotency_keys => '{order-42}')`)
	if ids[0] == got["alice"][0] || ids[0] == got["bob"][0] {
		t.Fatalf("the admin's key order-42 answered with another producer's message %d", ids[0])
	}
}

// Attack: forged clocks. A producer passes now => -infinity (or +infinity) to forge
// created_at and jump or park its message; a worker passes a far-future now to
// claim scheduled messages or to reap and steal live leases. Only herald_admin may
// pass a clock; nothing is stored or changed.
func TestOnlyAdminsPassAClock(t *testing.T) {
	ctx, pool := setup(t)
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	worker := loginPool(t, pool, "herald_test_worker", "herald_worker")

	for _, now := range []string{"'-infinity'", "'infinity'", "now() - interval '1 hour'"} {
		for _, sql := range []string{
			`SELECT herald.enqueue('email', 'a@example.com', ` + otp + `, now => ` + now + `)`,
			`SELECT herald.enqueue_batch('[{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"}}]', now => ` + now + `)`,
			`SELECT herald.enqueue_many('{email}', '{a@example.com}', ARRAY[` + otp + `::jsonb], now => ` + now + `)`,
		} {
			_, err := alice.Exec(ctx, sql)
			wantPgError(t, err, "42501", "now")
		}
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 0 {
		t.Fatalf("%d messages stored with a forged clock", n)
	}
	// A past run_at counts as now: it cannot jump the queue of its priority.
	_, err := alice.Exec(ctx, `SELECT herald.enqueue('email', 'a@example.com', `+otp+`, run_at => '-infinity')`)
	wantPgError(t, err, "22V05", "run_at")
	id := scalar[int64](t, alice, `SELECT herald.enqueue('email', 'a@example.com', `+otp+`, run_at => now() - interval '300 days')`)
	if dated := scalar[time.Time](t, pool, `SELECT run_at FROM herald.messages WHERE id = $1`, id); time.Since(dated) > time.Hour {
		t.Fatalf("a run_at in the past was stored as given: %v", dated)
	}
	mustExec(t, pool, `SELECT herald.enqueue('email', 'a@example.com', `+otp+`, run_at => now() + interval '1 day')`)

	// A worker: claim_batch in the future, reap_stale in the future, report with a clock.
	held := claim(t, pool, 1, time.Now().Add(time.Minute)) // the admin's test clock
	for _, sql := range []string{
		`SELECT count(*) FROM herald.claim_batch('thief', 10, now => now() + interval '2 days')`,
		`SELECT herald.reap_stale(now => now() + interval '2 days')`,
		`SELECT herald.extend_lease(ARRAY[1]::bigint[], ARRAY[1]::bigint[], '1 minute', now => now() + interval '1 day')`,
		fmt.Sprintf(`SELECT herald.complete(%d, %d, now => now() + interval '1 day')`, held[0].ID, held[0].Token),
		fmt.Sprintf(`SELECT herald.fail(%d, %d, 'x', 'transient', now => now() - interval '1 day')`, held[0].ID, held[0].Token),
	} {
		_, err := worker.Exec(ctx, sql)
		wantPgError(t, err, "42501", "now")
	}
	if s := scalar[string](t, pool, `SELECT string_agg(status, ',' ORDER BY id) FROM herald.messages`); s != "processing,queued" { // the one claimed, the one scheduled
		t.Fatalf("statuses after the attempts: %s", s)
	}
	// Without a clock the worker works.
	if n := scalar[int32](t, worker, `SELECT herald.reap_stale()`); n != 0 {
		t.Fatalf("reap_stale took %d live leases", n)
	}
}

// Attack: a producer names another producer in herald.producer (the setting the
// HTTP intake uses) to read or repeat its messages. Only herald_intake members may
// name one, and what they name lives under intake:<name>.
func TestOnlyTheIntakeNamesProducers(t *testing.T) {
	ctx, pool := setup(t)
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	intakeRole := loginPool(t, pool, "herald_test_intake", "herald_intake")

	named := func(p *pgxpool.Pool, name, sql string, args ...any) (int64, error) {
		var n int64
		err := pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT set_config('herald.producer', $1, true)`, name); err != nil {
				return err
			}
			return tx.QueryRow(ctx, sql, args...).Scan(&n)
		})
		return n, err
	}
	_, err := named(alice, "billing", `SELECT herald.enqueue('email', 'a@example.com', `+otp+`)`)
	wantPgError(t, err, "42501", "herald.producer")

	id, err := named(intakeRole, "billing", `SELECT herald.enqueue('email', 'a@example.com', `+otp+`, idempotency_key => 'k')`)
	if err != nil {
		t.Fatal(err)
	}
	if p := scalar[string](t, pool, `SELECT producer FROM herald.messages WHERE id = $1`, id); p != "intake:billing" {
		t.Fatalf("producer %q", p)
	}
	if n, err := named(intakeRole, "billing", `SELECT count(*) FROM herald.status($1)`, id); err != nil || n != 1 {
		t.Fatalf("the named producer does not see its message: %d %v", n, err)
	}
	if n, err := named(intakeRole, "shipping", `SELECT count(*) FROM herald.status($1)`, id); err != nil || n != 0 {
		t.Fatalf("another named producer sees it: %d %v", n, err)
	}
	if n, err := named(pool, "shipping", `SELECT count(*) FROM herald.status($1)`, id); err != nil || n != 0 {
		t.Fatalf("an admin naming a producer sees what that producer sees: %d %v", n, err)
	}
	_, err = named(intakeRole, "bad name!", `SELECT herald.enqueue('email', 'a@example.com', `+otp+`)`)
	wantPgError(t, err, "22V12", "herald.producer")
}

// Attack over HTTP: the holder of one intake token reads another token's message by
// id, or reuses its Idempotency-Key to learn its id. The intake runs as a real
// herald_intake login; each token is its own producer.
func TestIntakeTokensAreSeparateProducers(t *testing.T) {
	_, pool := setup(t)
	role := loginPool(t, pool, "herald_test_intake", "herald_intake")
	srv := httptest.NewServer(intake.Handler(role, intake.Config{Tokens: []intake.Token{
		{Name: "billing", Secret: "tok-billing"}, {Name: "shipping", Secret: "tok-shipping"}}}))
	defer srv.Close()
	billing := map[string]string{"Authorization": "Bearer tok-billing", "Idempotency-Key": "order-42"}
	shipping := map[string]string{"Authorization": "Bearer tok-shipping", "Idempotency-Key": "order-42"}

	var a, b, again struct{ ID int64 }
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", goodEmail, billing, &a); code != 202 {
		t.Fatalf("billing: %d", code)
	}
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", goodEmail, shipping, &b); code != 202 || b.ID == a.ID {
		t.Fatalf("shipping with billing's key: %d, id %d (billing's is %d)", code, b.ID, a.ID)
	}
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", goodEmail, billing, &again); code != 202 || again.ID != a.ID {
		t.Fatalf("billing's repeat: %d, id %d, want %d", code, again.ID, a.ID)
	}
	var e apiError
	if code := do(t, "GET", fmt.Sprintf("%s/v1/messages/%d", srv.URL, a.ID), "", "", shipping, &e); code != 404 {
		t.Fatalf("shipping read billing's message: %d", code)
	}
	if code := do(t, "GET", fmt.Sprintf("%s/v1/messages/%d", srv.URL, a.ID), "", "", billing, nil); code != 200 {
		t.Fatalf("billing cannot read its own message: %d", code)
	}
	if p := scalar[string](t, pool, `SELECT string_agg(producer, ',' ORDER BY id) FROM herald.messages`); p != "intake:billing,intake:shipping" {
		t.Fatalf("producers: %s", p)
	}
	// A role that is not herald_intake cannot serve named tokens: refused at start.
	plain := loginPool(t, pool, "herald_test_alice", "herald_producer")
	err := intake.CheckTokens(context.Background(), plain, []intake.Token{{Name: "billing", Secret: "x"}})
	wantPgError(t, err, "42501", "herald.producer")
}

// Attack by DNS rebinding: a developer runs herald with an open intake
// (HERALD_INTAKE_OPEN, as `make run` does) on 127.0.0.1:8080 and visits a page on
// rebind.example:8080, whose owner then points that name at 127.0.0.1. The page's
// scripts are now same-origin with the intake — no preflight, answers readable — and
// send what the browser would: Host rebind.example:8080, its Origin, Sec-Fetch-Site
// same-origin, a JSON body. Nothing they send is stored or answered; the developer's
// own requests (an IP address, localhost) are.
func TestTheOpenIntakeRefusesARebindingPage(t *testing.T) {
	srv, pool := intakeServer(t, intake.Config{})
	var mine struct{ ID int64 }
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", goodEmail, nil, &mine); code != 202 {
		t.Fatalf("the developer's own request: %d", code)
	}
	page := map[string]string{"Host": "rebind.example:8080", "Origin": "http://rebind.example:8080",
		"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}
	for _, host := range []string{"rebind.example:8080", "rebind.example", "REBIND.example.:8080", "localhost.rebind.example", "127.0.0.1.rebind.example"} {
		page["Host"] = host
		for _, req := range []struct{ method, path, body string }{
			{"POST", "/v1/messages", `{"channel":"email","recipient":"victim@example.com","payload":{"subject":"x","text":"from the page"}}`},
			{"POST", "/v1/messages/batch", `{"messages":[{"channel":"email","recipient":"victim@example.com","payload":{"subject":"x","text":"from the page"}}]}`},
			{"GET", fmt.Sprintf("/v1/messages/%d", mine.ID), ""},
			{"DELETE", fmt.Sprintf("/v1/messages/%d", mine.ID), ""},
		} {
			var e apiError
			ctype := ""
			if req.body != "" {
				ctype = "application/json"
			}
			if code := do(t, req.method, srv.URL+req.path, ctype, req.body, page, &e); code != 403 || e.Error.Code != "host_not_allowed" {
				t.Fatalf("%s %s from Host %s: %d %+v, want 403 host_not_allowed", req.method, req.path, host, code, e)
			}
		}
	}
	if n := countWhere(t, pool, `recipient = 'victim@example.com' OR status = 'cancelled'`); n != 0 {
		t.Fatalf("the page stored or cancelled %d messages", n)
	}
	for _, host := range []string{"localhost:8080", "LOCALHOST", "app.localhost:8080", "[::1]:8080", "127.0.0.1", "10.0.0.5:8080"} {
		if code := do(t, "GET", fmt.Sprintf("%s/v1/messages/%d", srv.URL, mine.ID), "", "", map[string]string{"Host": host}, nil); code != 200 {
			t.Fatalf("the developer's request to Host %s: %d", host, code)
		}
	}
	// With tokens the name does not matter: a rebinding page has no token.
	tokens := httptest.NewServer(intake.Handler(pool, intake.Config{Tokens: []intake.Token{{Name: "shop", Secret: "tok-shop"}}}))
	defer tokens.Close()
	if code := do(t, "GET", tokens.URL+"/v1/messages?idempotency_key=none", "", "", map[string]string{
		"Host": "herald.internal.example", "Authorization": "Bearer tok-shop"}, nil); code != 404 {
		t.Fatalf("a token's request to a DNS name: %d, want 404 (served)", code)
	}
}

// Attack at enqueue: webhook URLs with credentials or literal internal addresses, and
// URLs no runner can dial (a port outside 1..65535, no host), are refused with 22V02
// naming the recipient, and nothing is stored. Host names pass
// here; the runner judges what they resolve to when it connects.
func TestWebhookRecipientsRefusedAtEnqueue(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook')`)
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	for _, url := range []string{
		"http://user:pass@127.0.0.1/x", "https://token@hooks.example.com/x",
		"http://127.0.0.1:5432/", "http://[::1]/x", "http://0.0.0.0/x", "http://10.1.2.3/x",
		"http://169.254.169.254/latest/meta-data/iam/security-credentials/", "http://[fd00:ec2::254]/x",
		"http://[::ffff:127.0.0.1]/x", "http://127.1/x", "http://2130706433/x", "http://0x7f.0.0.1/x", "http://[zz::1]/x",
		"http://[::7f00:1]/x", "http://[2002:a9fe:a9fe::1]/latest/meta-data/", "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/x",
		// no URL the runner can dial: a port past 65535 or 0, no host
		"https://hooks.example.com:65536/x", "https://hooks.example.com:0/x", "https://hooks.example.com:80:80/x", "https://:443/x",
	} {
		_, err := alice.Exec(ctx, `SELECT herald.enqueue('hooks', $1, '{}')`, url)
		wantPgError(t, err, "22V02", "recipient")
		_, err = alice.Exec(ctx, `SELECT herald.enqueue_batch(jsonb_build_array(jsonb_build_object('channel', 'hooks', 'recipient', $1::text, 'payload', '{}'::jsonb),
			jsonb_build_object('channel', 'hooks', 'recipient', 'https://hooks.example.com/ok', 'payload', '{}'::jsonb)))`, url)
		wantPgError(t, err, "22V02", "messages[0].recipient")
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 0 {
		t.Fatalf("%d refused webhooks stored", n)
	}
	for _, url := range []string{"https://hooks.example.com/x", "http://8.8.8.8/x", "http://[2001:db8::1]:8080/x", "https://1password.example/x",
		"https://hooks.example.com:65535/x"} {
		mustExec(t, alice, `SELECT herald.enqueue('hooks', $1, '{}')`, url)
	}
}

// The networks SQL refuses at enqueue are the networks the runner refuses at connect.
func TestRefusedNetworksAgree(t *testing.T) {
	ctx, pool := setup(t)
	rows, err := pool.Query(ctx, `SELECT network::text, reason FROM herald._refused_networks()`)
	if err != nil {
		t.Fatal(err)
	}
	sqlList, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var n, why string
		err := r.Scan(&n, &why)
		return n + " " + why, err
	})
	if err != nil {
		t.Fatal(err)
	}
	var goList []string
	for _, n := range egress.Refused {
		goList = append(goList, n.Prefix.String()+" "+n.Reason)
	}
	if strings.Join(sqlList, "\n") != strings.Join(goList, "\n") {
		t.Fatalf("herald._refused_networks():\n%s\negress.Refused:\n%s", strings.Join(sqlList, "\n"), strings.Join(goList, "\n"))
	}
}

// Attack: Gmail keeps one message per Message-ID and drops a later one quoting the
// same, so whoever can mail a user and predict herald's next Message-IDs can make
// herald's security alerts vanish from that mailbox. The attacker gets one herald
// mail of its own, reads its Message-ID, and mails the victim every Message-ID it
// can derive for the next ids (the bare sequence, its own tag on the next ids)
// before herald sends the victim three alerts: the mailbox, keeping the first of
// each Message-ID, still holds all three. The tag comes from a key made at install
// (two installations differ), which no producer, intake or consumer can read.
func TestMessageIDsCannotBeSentAhead(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	relay := sendertest.StartSMTP(t, false)
	host, port, _ := net.SplitHostPort(relay.Addr)
	runnerProcess(t, url, "HERALD_SENDER_EMAIL=smtp", "HERALD_SMTP_HOST="+host, "HERALD_SMTP_PORT="+port, "HERALD_SMTP_TLS=none",
		"HERALD_EMAIL_FROM=Acme Security <security@example.com>", "HERALD_POLL_INTERVAL=100ms")
	messageID := func(r sendertest.Received) string {
		m, err := mail.ReadMessage(strings.NewReader(r.Data))
		if err != nil {
			t.Fatal(err)
		}
		return m.Header.Get("Message-Id")
	}

	alert := func(to string) int64 {
		return scalar[int64](t, pool, `SELECT herald.enqueue('email', $1, '{"subject":"New sign-in","text":"Was it you?"}')`, to)
	}
	own := alert("attacker@example.net")
	eventually(t, 30*time.Second, "the attacker's own mail sent", func() bool { return len(relay.Messages()) == 1 })
	seen := messageID(relay.Messages()[0])
	tag := ""
	if _, after, ok := strings.Cut(strings.Trim(seen, "<>"), "."); ok {
		tag, _, _ = strings.Cut(after, "@")
	}
	for next := own + 1; next <= own+5; next++ {
		for _, guess := range []string{fmt.Sprintf("<herald-%d@example.com>", next), fmt.Sprintf("<herald-%d.%s@example.com>", next, tag)} {
			msg := "From: attacker@example.net\r\nTo: victim@example.net\r\nSubject: hi\r\nMessage-ID: " + guess + "\r\n\r\nhello\r\n"
			if err := smtp.SendMail(relay.Addr, nil, "attacker@example.net", []string{"victim@example.net"}, []byte(msg)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var alerts []int64
	for range 3 {
		alerts = append(alerts, alert("victim@example.net"))
	}
	eventually(t, 30*time.Second, "the alerts sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 4 })

	kept := map[string]string{} // Message-ID -> the first sender, as Gmail keeps it
	for _, r := range relay.Messages() {
		if id := messageID(r); r.To[0] == "victim@example.net" && kept[id] == "" {
			kept[id] = r.From
		}
	}
	for _, id := range alerts {
		msgID := scalar[string](t, pool, `SELECT provider_message_id FROM herald.messages WHERE id = $1`, id)
		if kept[msgID] != "security@example.com" {
			t.Errorf("alert %d (%s): the mailbox kept the attacker's mail of that Message-ID instead", id, msgID)
		}
	}

	// The key: made at install, another for each installation, secret from producers.
	var keys [2][]byte
	for i := range keys {
		fresh := testdb.EmptyDatabase(t)
		migrateURL(t, fresh, false)
		keys[i] = messageIDKey(t, testdb.Pool(t, fresh))
	}
	if len(keys[0]) != 32 || bytes.Equal(keys[0], keys[1]) {
		t.Fatalf("two installations made the keys %x and %x", keys[0], keys[1])
	}
	for _, role := range []string{"herald_producer", "herald_intake", "herald_consumer"} {
		p := loginPool(t, pool, "msgid_"+strings.TrimPrefix(role, "herald_"), role)
		var key []byte
		err := p.QueryRow(context.Background(), `SELECT key FROM herald.message_id_keys LIMIT 1`).Scan(&key)
		if wantPgError(t, err, "42501", ""); key != nil {
			t.Fatalf("%s read the Message-ID key", role)
		}
	}
}
