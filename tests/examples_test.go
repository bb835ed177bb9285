package tests

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender/webhook"
	"github.com/herald/herald/tests/testdb"
)

// The producers in examples/ run as written against a fresh database: Python with
// psycopg, Node with node-postgres. Each enqueues, repeats an idempotency key,
// enqueues a batch, reads a status, and catches two validation errors by SQLSTATE
// and field (psycopg must raise DataError). `make test` installs what they need
// (python3-psycopg, nodejs/npm, examples/node's packages).
func TestExamplesRunAsWritten(t *testing.T) {
	t.Parallel()
	root := testdb.RepoRoot()
	for _, ex := range []struct {
		name string
		cmd  []string
		need string
	}{
		{"python", []string{"/usr/bin/python3", filepath.Join(root, "examples", "python", "producer.py")}, "apt-get install python3-psycopg"},
		{"node", []string{"node", filepath.Join(root, "examples", "node", "producer.js")}, "npm ci --prefix examples/node"},
	} {
		t.Run(ex.name, func(t *testing.T) {
			t.Parallel()
			url := testdb.New(t)
			cmd := exec.Command(ex.cmd[0], ex.cmd[1:]...)
			cmd.Env = append(os.Environ(), "DATABASE_URL="+url)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %v (make test installs what it needs: %s)\n%s", ex.cmd, err, ex.need, out)
			}
			text := string(out)
			for _, want := range []string{"refused: 22V02 recipient:", "refused: 22V02 messages[2].recipient:", "reminder-7: cancelled\n", "\nok\n"} {
				if !strings.Contains(text, want) {
					t.Fatalf("%s printed no %q:\n%s", ex.name, want, text)
				}
			}
			pool := testdb.Pool(t, url)
			if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE status <> 'cancelled'`); n != 3 {
				t.Fatalf("%d messages stored and not cancelled, want 3 (one repeated, two in a batch, none of the bad ones)", n)
			}
		})
	}
}

// examples/node/callbacks.js, a status-callback receiver with Node's standard library
// alone, verifies what `herald run` sends it with the channel's whpk_ public key (a
// third implementation of Ed25519 after Go's and OpenSSL's) and prints the event.
// Attack: a request signed with another key gets 401 and is not printed.
func TestCallbackReceiverExample(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	signingKey := "whsk_" + base64.StdEncoding.EncodeToString([]byte("the example receiver's seed, 32B"))
	publicKey, err := webhook.PublicKey(signingKey)
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	receiver := exec.Command("node", filepath.Join(testdb.RepoRoot(), "examples", "node", "callbacks.js"))
	receiver.Env = append(os.Environ(), "HERALD_WEBHOOK_PUBLIC_KEY="+publicKey, "PORT="+port)
	printed := &logBuffer{}
	receiver.Stdout, receiver.Stderr = printed, printed
	if err := receiver.Start(); err != nil {
		t.Fatalf("node: %v (make test installs nodejs)", err)
	}
	t.Cleanup(func() { _ = receiver.Process.Kill(); _, _ = receiver.Process.Wait() })
	eventually(t, 20*time.Second, "the receiver listening", func() bool { return strings.Contains(printed.String(), "listening") })

	callbacksTo(t, pool, "current_user", "http://localhost:"+port+"/herald")
	cmd, logs := runnerProcess(t, url, "HERALD_SENDER_EMAIL=noop", "HERALD_SENDER_CALLBACKS=webhook",
		"HERALD_CALLBACKS_WEBHOOK_SECRETS="+signingKey, "HERALD_WEBHOOK_ALLOW=127.0.0.1/32,::1/128", "HERALD_POLL_INTERVAL=100ms")
	id := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}', idempotency_key => 'order-9')`)
	want := fmt.Sprintf("sent message %d (order-9): sent", id)
	eventually(t, 30*time.Second, "the receiver printing the callback", func() bool { return strings.Contains(printed.String(), want) })

	otherSeed := base64.StdEncoding.EncodeToString([]byte("somebody else's seed, 32 bytes!!"))
	forger, _ := webhook.DecodeSigningKey("whsk_" + otherSeed)
	body := []byte(`{"payload":{"event":"delivered","message":{"message_id":1,"status":"sent"}}}`)
	ts := time.Now().Unix()
	req, _ := http.NewRequest("POST", "http://"+addr+"/herald", bytes.NewReader(body))
	req.Header.Set(webhook.HeaderID, "msg_forged")
	req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(webhook.HeaderSignature, webhook.SignAsymmetric(forger, "msg_forged", ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || strings.Contains(printed.String(), "delivered message 1") {
		t.Fatalf("a forged callback: %d\n%s", resp.StatusCode, printed.String())
	}
	waitExit(t, cmd, logs, 15*time.Second)
}
