package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender/webhook"
	"github.com/herald/herald/tests/testdb"
)

// freeAddr returns a loopback address with a port nobody listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	return freeAddrs(t, 1)[0]
}

// freeAddrs returns n loopback addresses with ports nobody listens on right now, each
// a different port: all are held until all are found (two freeAddr calls in a row can
// get the same port back).
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		addrs[i] = ln.Addr().String()
	}
	return addrs
}

// waitHTTP polls until something answers on addr (the process has no other signal).
func waitHTTP(t *testing.T, addr string) {
	t.Helper()
	eventually(t, 20*time.Second, "the HTTP server on "+addr, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// `herald serve` is the intake alone: it accepts a message (202), refuses 100 KiB of
// headers (431, nothing stored), answers /healthz,
// counts its answers (by token, status and code) and the delivery events its
// endpoints record in /metrics, and exits 0 on SIGTERM. `herald run` with HERALD_INTAKE=off serves no intake.
func TestServeAndIntakeOff(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)

	addr := freeAddr(t)
	eventsSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a generic event secret, 32 bytes"))
	cmd, logs := runnerProcessArgs(t, url, []string{"serve"}, "HERALD_HTTP_ADDR="+addr, "HERALD_INTAKE_TOKENS=svc:tok-SECRET-serve",
		"HERALD_EVENTS_SECRETS="+eventsSecret)
	waitHTTP(t, addr)
	var ok struct{ ID int64 }
	if code := do(t, "POST", "http://"+addr+"/v1/messages", "application/json", goodEmail,
		map[string]string{"Authorization": "Bearer tok-SECRET-serve"}, &ok); code != 202 || ok.ID == 0 {
		t.Fatalf("herald serve: %d %+v", code, ok)
	}
	do(t, "POST", "http://"+addr+"/v1/messages", "application/json", goodEmail, map[string]string{"Authorization": "Bearer guess"}, nil)
	do(t, "POST", "http://"+addr+"/v1/messages", "application/json", `{"channel":"sms","recipient":"555","payload":{"text":"x"}}`,
		map[string]string{"Authorization": "Bearer tok-SECRET-serve"}, nil)
	key, _ := webhook.DecodeSecret(eventsSecret)
	body := fmt.Sprintf(`[{"event_id":"e1","message_id":%d,"event":"delivered"}]`, ok.ID)
	ts := time.Now().Unix()
	if code := do(t, "POST", "http://"+addr+"/v1/events/generic", "application/json", body, map[string]string{
		webhook.HeaderID: "evt_1", webhook.HeaderTimestamp: strconv.FormatInt(ts, 10),
		webhook.HeaderSignature: webhook.Sign(key, "evt_1", ts, []byte(body))}, nil); code != 200 {
		t.Fatalf("herald serve, a delivery event: %d", code)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	exposed, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`herald_intake_requests_total{code="none",status="202",token="svc"} 1`,
		`herald_intake_requests_total{code="unauthorized",status="401",token=""} 1`,
		`herald_intake_requests_total{code="invalid_recipient",status="400",token="svc"} 1`} {
		if !bytes.Contains(exposed, []byte(want)) {
			t.Fatalf("herald serve /metrics lacks %s:\n%s", want, exposed)
		}
	}
	if !bytes.Contains(exposed, []byte(`herald_delivery_events_received_total{event="delivered",source="generic"} 1`)) ||
		!bytes.Contains(exposed, []byte("process_resident_memory_bytes")) || bytes.Contains(exposed, []byte("SECRET")) {
		t.Fatalf("herald serve /metrics:\n%s", exposed)
	}
	var health map[string]string
	if code := do(t, "GET", "http://"+addr+"/healthz", "", "", nil, &health); code != 200 || health["database"] != "ok" {
		t.Fatalf("herald serve /healthz: %d %v", code, health)
	}
	if code := do(t, "GET", "http://"+addr+"/livez", "", "", nil, &health); code != 200 || health["http"] != "serving" {
		t.Fatalf("herald serve /livez: %d %v", code, health)
	}
	// Headers past 64 KiB are refused before the token is read: a client holds no
	// more than that per connection. A valid message with them is not stored.
	if code := do(t, "POST", "http://"+addr+"/v1/messages", "application/json", goodEmail, map[string]string{
		"Authorization": "Bearer tok-SECRET-serve", "X-Padding": strings.Repeat("p", 100<<10)}, nil); code != 431 {
		t.Fatalf("a request with 100 KiB of headers: %d, want 431", code)
	}
	waitExit(t, cmd, logs, 10*time.Second)
	if strings.Contains(logs.String(), "SECRET") {
		t.Fatalf("the token is in the logs:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "intake is open") {
		t.Fatal("warned that the intake is open although a token is set")
	}
	if n := countWhere(t, pool, `id = $1`, ok.ID); n != 1 {
		t.Fatal("the accepted message is not stored")
	}
	if n := countWhere(t, pool, `producer = 'intake:svc'`); n != 1 {
		t.Fatalf("%d messages of the token stored, want the one accepted", n)
	}

	addr = freeAddr(t)
	cmd, logs = runnerProcessArgs(t, url, []string{"run"}, "HERALD_HTTP_ADDR="+addr, "HERALD_INTAKE=off", "HERALD_SENDER_EMAIL=noop",
		"HERALD_SMTP_PASSWORD=smtp-SECRET-run", "HERALD_INTAKE_TOKENS=svc:tok-SECRET-run")
	waitHTTP(t, addr)
	resp, err = http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(metrics, []byte("herald_")) || bytes.Contains(metrics, []byte("SECRET")) {
		t.Fatalf("/metrics: no herald metrics, or a secret in them:\n%s", metrics)
	}
	if code := do(t, "POST", "http://"+addr+"/v1/messages", "application/json", goodEmail, nil, nil); code != 404 && code != 405 {
		t.Fatalf("intake off, POST answered %d", code)
	}
	if code := do(t, "GET", "http://"+addr+"/healthz", "", "", nil, nil); code != 200 && code != 503 {
		t.Fatalf("intake off, /healthz answered %d", code)
	}
	waitExit(t, cmd, logs, 15*time.Second)
	if strings.Contains(logs.String(), "SECRET") {
		t.Fatalf("a secret is in the runner's logs:\n%s", logs.String())
	}

	// With no token configured the intake does not start, unless the operator says it
	// may be open; then the open intake is announced at start.
	for _, args := range [][]string{{"serve"}, {"run"}} {
		addr = freeAddr(t)
		cmd, logs = runnerProcessArgs(t, url, args, "HERALD_HTTP_ADDR="+addr, "HERALD_SENDER_EMAIL=noop")
		if err := cmd.Wait(); err == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(logs.String(), "has no token") {
			t.Fatalf("herald %s with no token: %v\n%s", args[0], err, logs.String())
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Fatalf("herald %s with no token left %s listening", args[0], addr)
		}
	}
	addr = freeAddr(t)
	cmd, logs = runnerProcessArgs(t, url, []string{"serve"}, "HERALD_HTTP_ADDR="+addr, "HERALD_INTAKE_OPEN=true")
	waitHTTP(t, addr)
	waitExit(t, cmd, logs, 10*time.Second)
	if !strings.Contains(logs.String(), "intake is open") {
		t.Fatalf("no warning about the open intake:\n%s", logs.String())
	}
}

// The intake tells a producer at its max_pending to come back after the count
// interval it runs with: herald run's --quota-interval, herald serve's
// HERALD_QUOTA_INTERVAL.
func TestIntakeRetryAfterIsTheCountInterval(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	mustExec(t, pool, `INSERT INTO herald.producers (producer, max_pending, pending, counted_at) VALUES ('intake:svc', 1, 1, now())`)
	for _, c := range []struct {
		args []string
		env  string
	}{
		{[]string{"run", "--quota-interval", "42s"}, "HERALD_QUOTA_INTERVAL=7s"}, // the flag wins
		{[]string{"serve"}, "HERALD_QUOTA_INTERVAL=42s"},
	} {
		addr := freeAddr(t)
		runnerProcessArgs(t, url, c.args, "HERALD_HTTP_ADDR="+addr, "HERALD_SENDER_EMAIL=noop", "HERALD_INTAKE_TOKENS=svc:tok-quota", c.env)
		waitHTTP(t, addr)
		code, _, header, err := postEmail(http.DefaultClient, addr, "tok-quota")
		if err != nil {
			t.Fatal(err)
		}
		if code != 429 || header.Get("Retry-After") != "42" {
			t.Errorf("%v: %d, Retry-After %q, want 429 and 42", c.args, code, header.Get("Retry-After"))
		}
	}
}

// A producer flooding the intake of `herald run` cannot stall deliveries nor shut out
// the other producers. Attack: two tokens' requests are held in the database (their
// budgets' rows locked, as a slow enqueue would be) until the HTTP services' pool is
// full. The runner still sends a message enqueued meanwhile (it has a pool of its
// own); a token's requests past HERALD_INTAKE_MAX_IN_FLIGHT get 429 unread, nothing
// stored; and when connections come free, a third token gets one although the
// flooding token has requests waiting (a token uses all of the pool but one).
func TestIntakeFloodLeavesTheRunnerAndOthersTheirConnections(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	// A send_limit only so that their enqueues lock a budget row.
	mustExec(t, pool, `INSERT INTO herald.producers (producer, send_limit, send_window)
		VALUES ('intake:flood', 1000000, '1 day'), ('intake:flood2', 1000000, '1 day')`)
	addr := freeAddr(t)
	runnerProcessArgs(t, url, []string{"run"}, "HERALD_HTTP_ADDR="+addr, "HERALD_SENDER_EMAIL=noop",
		"HERALD_INTAKE_TOKENS=flood:tok-flood,flood2:tok-flood2,other:tok-other",
		"HERALD_DB_POOL=4", "HERALD_HTTP_DB_POOL=4", "HERALD_INTAKE_MAX_IN_FLIGHT=4")
	waitHTTP(t, addr)
	client := &http.Client{Timeout: 15 * time.Second}
	post := func(token string) (int, apiError) { // safe in any goroutine: a failure is code 0
		code, e, _, err := postEmail(client, addr, token)
		if err != nil {
			e.Error.Message = err.Error()
		}
		return code, e
	}
	for _, tok := range []string{"tok-flood", "tok-flood2"} { // their budgets' rows
		if code, e := post(tok); code != 202 {
			t.Fatalf("%s: %d %+v", tok, code, e)
		}
	}
	// lock holds the row of producer's budget; it returns its session's pid and the
	// release.
	lock := func(producer string) (int32, func()) {
		tx, err := pool.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var pid int32
		if err := tx.QueryRow(t.Context(), `SELECT pg_backend_pid() FROM herald.producer_buckets WHERE producer = $1 FOR UPDATE`, producer).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		return pid, func() { tx.Rollback(context.Background()) }
	}
	// blockedBy counts the HTTP pool's connections waiting for lock holder pid, or in
	// line behind one that does.
	blockedBy := func(pid int32) int64 {
		return scalar[int64](t, pool, `WITH RECURSIVE w (pid) AS (
			  SELECT $1::integer
			  UNION
			  SELECT a.pid FROM pg_stat_activity a JOIN w ON w.pid = ANY (pg_blocking_pids(a.pid))
			  WHERE a.application_name = 'herald run http')
			SELECT count(*) - 1 FROM w`, pid)
	}
	type answer struct {
		token string
		code  int
		e     apiError
	}
	answers := make(chan answer, 16)
	send := func(token string) {
		go func() { code, e := post(token); answers <- answer{token, code, e} }()
	}
	next := func(what string) answer {
		t.Helper()
		select {
		case a := <-answers:
			return a
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer in 10 s: %s", what)
			return answer{}
		}
	}
	pid1, release1 := lock("intake:flood")
	pid2, release2 := lock("intake:flood2")
	defer release1()
	defer release2()
	for range 4 {
		send("tok-flood")
	}
	eventually(t, 10*time.Second, "the flooding token's requests held in the database", func() bool { return blockedBy(pid1) >= 3 })
	send("tok-flood2")
	eventually(t, 10*time.Second, "three connections and one (the HTTP pool full; a token uses all but one)", func() bool {
		return blockedBy(pid1) == 3 && blockedBy(pid2) == 1
	})

	// The fifth of one token: refused unread (one of its five is answered, 429).
	send("tok-flood")
	if a := next("the fifth request of a token"); a.token != "tok-flood" || a.code != 429 || a.e.Error.Code != "too_many_in_flight" {
		t.Fatalf("the fifth request of a token with four in flight: %+v, want tok-flood's 429 too_many_in_flight", a)
	}
	// Deliveries go on.
	var id int64
	if err := pool.QueryRow(t.Context(), `SELECT herald.enqueue('email', 'direct@example.com', '{"subject":"s","text":"t"}')`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the runner to send a message while the intake's pool is full", func() bool {
		return countWhere(t, pool, `id = $1 AND status = 'sent'`, id) == 1
	})

	// flood2's request comes through; flood's waiting one does not take the freed
	// connection (flood uses all it may already): another token gets it.
	release2()
	if a := next("flood2's request"); a.token != "tok-flood2" || a.code != 202 {
		t.Fatalf("after its row was released: %+v, want tok-flood2's 202", a)
	}
	if code, e := post("tok-other"); code != 202 {
		t.Fatalf("another token while one floods: %d %+v", code, e)
	}
	release1()
	for range 4 {
		if a := next("flood's requests"); a.token != "tok-flood" || a.code != 202 {
			t.Fatalf("after its row was released: %+v, want tok-flood's 202", a)
		}
	}
	if got := scalar[string](t, pool, `SELECT string_agg(producer || ' ' || n, ', ' ORDER BY producer)
		FROM (SELECT producer, count(*) AS n FROM herald.messages WHERE producer LIKE 'intake:%' GROUP BY producer) x`); got != "intake:flood 5, intake:flood2 2, intake:other 1" {
		t.Fatalf("stored: %s, want flood 5 (the refused one not), flood2 2, other 1", got)
	}
}

// A request that runs out of HERALD_HTTP_TIMEOUT is answered 503 timeout while its
// connection can still carry the answer, and its statement is cancelled in the
// server: nothing is stored for it, neither for a request held on a lock nor for one
// waiting its turn for a connection. (Without the deadline the enqueue waited out the
// lock and committed after the 15 s write timeout had cut its answer off: the client
// read EOF for a stored message, and a retry stored it twice.) A kept-alive
// connection is closed after HERALD_HTTP_IDLE_TIMEOUT.
func TestARequestOutOfTimeIsAnsweredAndStoresNothing(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	mustExec(t, pool, `INSERT INTO herald.producers (producer, send_limit, send_window) VALUES ('intake:p', 1000000, '1 day')`)
	mustExec(t, pool, `INSERT INTO herald.producer_buckets (producer, clear_at) VALUES ('intake:p', now())`) // the row its enqueues lock
	addr := freeAddr(t)
	runnerProcessArgs(t, url, []string{"serve"}, "HERALD_HTTP_ADDR="+addr, "HERALD_INTAKE_TOKENS=p:tok",
		"HERALD_HTTP_DB_POOL=2", "HERALD_HTTP_TIMEOUT=2s", "HERALD_HTTP_IDLE_TIMEOUT=1s")
	waitHTTP(t, addr)
	client := &http.Client{Timeout: 15 * time.Second}
	post := func() (int, apiError, error) {
		code, e, _, err := postEmail(client, addr, "tok")
		return code, e, err
	}
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), `SELECT FROM herald.producer_buckets WHERE producer = 'intake:p' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		code int
		e    apiError
		err  error
	}
	answers := make(chan answer, 2)
	for range 2 { // one holds the token's only connection (the pool less one), blocked; one waits for it
		go func() { code, e, err := post(); answers <- answer{code, e, err} }()
	}
	for range 2 {
		if a := <-answers; a.code != 503 || a.e.Error.Code != "timeout" {
			t.Fatalf("a request out of time: %d %+v %v, want 503 timeout", a.code, a.e, a.err)
		}
	}
	eventually(t, 10*time.Second, "no statement of the intake left waiting on the lock", func() bool {
		return scalar[int64](t, pool, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'herald serve' AND wait_event_type = 'Lock'`) == 0
	})
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a request in time to be stored", func() bool { code, _, _ := post(); return code == 202 })
	if n := countWhere(t, pool, `true`); n != 1 {
		t.Fatalf("%d messages stored, want 1: those of the requests out of time were too", n)
	}

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: herald\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("an idle kept-alive connection: %v, want it closed by the server (EOF)", err)
	}
}

// A database that takes no writes (a standby, or a primary demoted in a failover,
// reached at a stale address) makes an enqueue retryable, not an error: the intake
// answers 503 database_unavailable with Retry-After, `herald enqueue` exits 3 (the
// database), and nothing is stored. They were a 500 "internal error" and exit 1.
func TestAReadOnlyDatabaseIsUnavailableNotAnError(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	mustExec(t, pool, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = on', current_database()); END $$`)
	addr := freeAddr(t)
	runnerProcessArgs(t, url, []string{"serve"}, "HERALD_HTTP_ADDR="+addr, "HERALD_INTAKE_OPEN=true")
	waitHTTP(t, addr)
	code, e, header, err := postEmail(http.DefaultClient, addr, "")
	if err != nil {
		t.Fatal(err)
	}
	if code != 503 || e.Error.Code != "database_unavailable" || header.Get("Retry-After") == "" {
		t.Fatalf("an enqueue on a read-only database: %d %+v, want 503 database_unavailable with Retry-After", code, e)
	}
	cmd := exec.Command(buildHerald(t), "enqueue", "--channel", "email", "--recipient", "ana@example.com", "--payload", `{"subject":"s","text":"t"}`)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+url)
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 3 || !strings.Contains(string(out), "read-only") {
		t.Fatalf("herald enqueue on a read-only database: exit %d %q (%v), want 3 naming it", code, out, err)
	}
	if n := countWhere(t, pool, `true`); n != 0 {
		t.Fatalf("%d messages stored", n)
	}
}

// postEmail POSTs goodEmail to the intake at addr with token (none when empty) and
// returns the status, the decoded error and the answer's headers. Safe in any
// goroutine: a request that fails is status 0 with its error.
func postEmail(client *http.Client, addr, token string) (int, apiError, http.Header, error) {
	var e apiError
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/messages", strings.NewReader(goodEmail))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, e, nil, err
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e, resp.Header, nil
}
