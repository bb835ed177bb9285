package tests

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender/webhook"
	"github.com/herald/herald/tests/testdb"
)

// Secrets rotated in place (a Kubernetes Secret volume, Vault Agent) reach a running
// runner. SendGrid (a stand-in speaking its wire format) takes one API key at a time.
// Rotated while the runner holds the old one: the next send is refused (401), the
// channel pauses, and the probe reads the key file again, checks the new key and
// resumes: the message goes out with its attempt given back, no restart. Rotated
// again with SIGHUP (systemctl reload) before the old key is revoked: the runner
// reads the file at once and no send is refused. The key appears in no log.
func TestRotatedSecretFilesAreReadAgain(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	prov := &revocableProvider{}
	prov.key.Store("SG.first-k3y")
	provider := httptest.NewServer(prov)
	defer provider.Close()
	keyFile := filepath.Join(t.TempDir(), "sendgrid-key")
	replaceFile(t, keyFile, "SG.first-k3y")
	cmd, logs := runnerProcess(t, dbURL, "HERALD_SENDER_EMAIL=sendgrid", "HERALD_SENDGRID_URL="+provider.URL,
		"HERALD_SENDGRID_API_KEY_FILE="+keyFile, "HERALD_EMAIL_FROM=noreply@example.com",
		"HERALD_POLL_INTERVAL=100ms", "HERALD_PROBE_INTERVAL=200ms")
	send := func(n int) int64 {
		t.Helper()
		id := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'ana@example.net', jsonb_build_object('subject', 's' || $1::int, 'text', 't'))`, n)
		eventually(t, 30*time.Second, "message sent", func() bool { return countWhere(t, pool, `id = $1 AND status = 'sent'`, id) == 1 })
		return id
	}
	send(1)

	// Rotated, the old key revoked at once.
	replaceFile(t, keyFile, "SG.second-k3y")
	prov.key.Store("SG.second-k3y")
	second := send(2)
	if n := prov.tries.Load(); n != 1 || countWhere(t, pool, `id = $1 AND attempts = 1`, second) != 1 {
		t.Fatalf("%d sends refused; the message's attempts: %d\n%s", n,
			scalar[int64](t, pool, `SELECT attempts FROM herald.messages WHERE id = $1`, second), logs.String())
	}
	if paused := scalar[bool](t, pool, `SELECT paused FROM herald.channels WHERE name = 'email'`); paused {
		t.Fatal("the channel is still paused")
	}

	// Rotated with SIGHUP before the old key goes.
	replaceFile(t, keyFile, "SG.third-k3y")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the reload", func() bool { return strings.Count(logs.String(), "secrets reloaded") == 2 })
	prov.key.Store("SG.third-k3y")
	send(3)
	if n := prov.tries.Load(); n != 1 {
		t.Fatalf("%d sends refused after SIGHUP, want none more\n%s", n-1, logs.String())
	}
	waitExit(t, cmd, logs, 15*time.Second)
	if strings.Contains(logs.String(), "k3y") {
		t.Fatalf("a key is in the log:\n%s", logs.String())
	}
}

// Attack: a producer's intake token has leaked. The operator removes it from the
// tokens file and sends SIGHUP (systemctl reload): from then on the leaked token is
// refused (401, nothing stored) while the producer's new token and the others work,
// with no restart. A file emptied by mistake does not open the intake to everyone:
// the tokens it has stay, and it says why.
func TestIntakeTokensAreReadAgain(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	file := filepath.Join(t.TempDir(), "tokens")
	replaceFile(t, file, "shop:tok-leaked,billing:tok-billing")
	addr := freeAddr(t)
	serve, logs := runnerProcessArgs(t, dbURL, []string{"serve"}, "HERALD_HTTP_ADDR="+addr, "HERALD_INTAKE_TOKENS_FILE="+file)
	waitHTTP(t, addr)
	post := func(token string) int {
		t.Helper()
		return do(t, "POST", "http://"+addr+"/v1/messages", "application/json",
			`{"channel":"email","recipient":"ana@example.net","payload":{"subject":"s","text":"t"}}`, map[string]string{"Authorization": "Bearer " + token}, nil)
	}
	if code := post("tok-leaked"); code != 202 {
		t.Fatalf("before the reload: %d", code)
	}
	reload := func(n int) {
		t.Helper()
		if err := serve.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the reload", func() bool {
			return strings.Count(logs.String(), "intake tokens read again")+strings.Count(logs.String(), "intake tokens not read again") == n
		})
	}
	replaceFile(t, file, "billing:tok-billing,shop:tok-new")
	reload(1)
	stored := countWhere(t, pool, `true`)
	for token, want := range map[string]int{"tok-leaked": 401, "tok-new": 202, "tok-billing": 202} {
		if code := post(token); code != want {
			t.Fatalf("after the reload, %s: %d, want %d", token, code, want)
		}
	}
	if n := countWhere(t, pool, `true`); n != stored+2 || countWhere(t, pool, `producer = 'intake:shop'`) != 2 {
		t.Fatalf("%d messages stored after the reload, want 2 more, the new token's the shop's", n-stored)
	}
	replaceFile(t, file, "")
	reload(2)
	if code := post("tok-new"); code != 202 {
		t.Fatalf("an emptied file: the shop's token %d", code)
	}
	if code := do(t, "POST", "http://"+addr+"/v1/messages", "application/json",
		`{"channel":"email","recipient":"ana@example.net","payload":{"subject":"s","text":"t"}}`, nil, nil); code != 401 {
		t.Fatalf("an emptied file opened the intake: %d", code)
	}
	if !strings.Contains(logs.String(), "no token would open it to anyone") || strings.Contains(logs.String(), "tok-") {
		t.Fatalf("the refused reload: %s", logs.String())
	}
	waitExit(t, serve, logs, 15*time.Second)
}

// Attack: a webhook channel's signing secret has leaked, so anyone could sign
// requests its receivers take. The operator puts a new secret in the secrets file,
// next to the old one, and sends SIGHUP: from the next send on, webhooks carry the
// new secret's signature beside the old; once the receivers take the new one, the old
// is taken out of the file, SIGHUP again, and no webhook is signed with the leaked
// secret any more — with no restart. The receiver checks each signature on its own.
func TestWebhookSecretFilesAreReadAgain(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook')`)
	leaked, fresh := "whsec_"+strings.Repeat("bGVha2Vk", 4), "whsec_"+strings.Repeat("ZnJlc2gh", 4)
	type signed struct{ byLeaked, byFresh bool }
	got := make(chan signed, 8)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- signed{webhook.Verify([]string{leaked}, r.Header, body, time.Minute, time.Now()) == nil,
			webhook.Verify([]string{fresh}, r.Header, body, time.Minute, time.Now()) == nil}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	file := filepath.Join(t.TempDir(), "secrets")
	replaceFile(t, file, leaked)
	cmd, logs := runnerProcess(t, dbURL, "HERALD_SENDER_HOOKS=webhook", "HERALD_HOOKS_WEBHOOK_SECRETS_FILE="+file,
		"HERALD_WEBHOOK_ALLOW=localhost", "HERALD_POLL_INTERVAL=100ms")
	url := strings.Replace(receiver.URL, "127.0.0.1", "localhost", 1) + "/in"
	send := func(want signed) {
		t.Helper()
		mustExec(t, pool, `SELECT herald.enqueue('hooks', $1, '{"n": 1}')`, url)
		select {
		case s := <-got:
			if s != want {
				t.Fatalf("signed by the leaked secret %v, by the new %v; want %v\n%s", s.byLeaked, s.byFresh, want, logs.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no webhook\n%s", logs.String())
		}
	}
	reload := func(times int) {
		t.Helper()
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the reload", func() bool { return strings.Count(logs.String(), "secrets reloaded") == times })
	}
	send(signed{byLeaked: true})
	replaceFile(t, file, fresh+" "+leaked)
	reload(1)
	send(signed{byLeaked: true, byFresh: true})
	replaceFile(t, file, fresh)
	reload(2)
	send(signed{byFresh: true})
	// A file that no longer parses keeps the secret the runner has.
	replaceFile(t, file, "not-a-secret")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the refusal", func() bool { return strings.Contains(logs.String(), "reloading secrets failed") })
	send(signed{byFresh: true})
	waitExit(t, cmd, logs, 15*time.Second)
	if strings.Contains(logs.String(), "bGVha2Vk") || strings.Contains(logs.String(), "ZnJlc2gh") {
		t.Fatalf("a secret is in the log:\n%s", logs.String())
	}
}

// Attack: the console's token has leaked (and with it every cookie, which holds the
// token). The operator writes a new token to the token file and sends SIGHUP: from
// then on the old cookie and the old token are refused — the holder can neither read
// a page nor pause a channel — and the new token signs in, with no restart. A token
// too short to keep changes nothing.
func TestConsoleTokenIsReadAgain(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	const leaked, fresh = "leaked-console-t0ken-1", "fresh-console-t0ken-22"
	file := filepath.Join(t.TempDir(), "console-token")
	replaceFile(t, file, leaked)
	addr := freeAddr(t)
	serve, logs := runnerProcessArgs(t, dbURL, []string{"serve"}, "HERALD_HTTP_ADDR="+addr, "HERALD_INTAKE=off", "HERALD_CONSOLE_TOKEN_FILE="+file)
	waitHTTP(t, addr)
	base := "http://" + addr + "/console/"
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	login := func(token string) (int, *http.Cookie) {
		t.Helper()
		resp, err := client.PostForm(base+"login", url.Values{"token": {token}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for _, c := range resp.Cookies() {
			return resp.StatusCode, c
		}
		return resp.StatusCode, nil
	}
	ask := func(method, path string, form url.Values, cookie *http.Cookie) int {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(cookie)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	reload := func(want string) {
		t.Helper()
		n := strings.Count(logs.String(), want)
		if err := serve.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, want, func() bool { return strings.Count(logs.String(), want) == n+1 })
	}
	code, old := login(leaked)
	if code != http.StatusSeeOther || old == nil || ask("GET", "", nil, old) != 200 {
		t.Fatalf("signing in with the token: %d %v", code, old)
	}
	replaceFile(t, file, fresh)
	reload("console token read again")
	if code := ask("GET", "", nil, old); code != http.StatusUnauthorized {
		t.Fatalf("the leaked token's cookie after the rotation: %d, want 401", code)
	}
	if code := ask("POST", "pause", url.Values{"channel": {"email"}, "reason": {"attacker"}}, old); code != http.StatusUnauthorized {
		t.Fatalf("a pause with the leaked token's cookie: %d, want 401", code)
	}
	if scalar[bool](t, pool, `SELECT paused FROM herald.channels WHERE name = 'email'`) {
		t.Fatal("the leaked token's cookie paused the channel")
	}
	if code, c := login(leaked); code != http.StatusUnauthorized || c != nil {
		t.Fatalf("signing in with the leaked token: %d %v, want 401 and no cookie", code, c)
	}
	code, cookie := login(fresh)
	if code != http.StatusSeeOther || cookie == nil || ask("GET", "", nil, cookie) != 200 {
		t.Fatalf("signing in with the new token: %d %v", code, cookie)
	}
	replaceFile(t, file, "short")
	reload("the console token was not read again")
	if ask("GET", "", nil, cookie) != 200 {
		t.Fatal("a token too short replaced the console's")
	}
	waitExit(t, serve, logs, 15*time.Second)
	for _, token := range []string{leaked, fresh} {
		if strings.Contains(logs.String(), token) {
			t.Fatalf("a token is in the log:\n%s", logs.String())
		}
	}
}

// replaceFile puts content and a newline in path as a Secret volume or Vault Agent
// does: written beside it, then renamed over it.
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path+".new", []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}
