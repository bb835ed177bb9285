package tests

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald/herald/tests/testdb"
)

// startPgBouncer runs Debian's PgBouncer in transaction mode in front of the test
// server and returns its address. `make test` installs it.
func startPgBouncer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/pgbouncer"); err != nil {
			t.Fatal("pgbouncer is not installed (make test installs Debian's pgbouncer)")
		}
	}
	server, err := url.Parse(testdb.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "herald-pgbouncer-") // not t.TempDir: its parent is private, and
	if err != nil {                                   // PgBouncer runs as postgres when we are root
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	host, port, _ := net.SplitHostPort(addr)
	serverPort := server.Port()
	if serverPort == "" {
		serverPort = "5432"
	}
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%s
[pgbouncer]
listen_addr = %s
listen_port = %s
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = 4
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
`, server.Hostname(), serverPort, host, port, filepath.Join(dir, "userlist.txt"))
	role := testdb.Config(t).TestRole
	users := fmt.Sprintf("%q %q\n", role.Username, role.Password)
	for name, body := range map[string]string{"pgbouncer.ini": ini, "userlist.txt": users} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{bin, filepath.Join(dir, "pgbouncer.ini")}
	if os.Getuid() == 0 { // PgBouncer refuses to run as root
		args = append([]string{"runuser", "-u", "postgres", "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // runuser's child dies with it
	logs := &logBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pgbouncer:\n%s", logs.String())
		}
	})
	eventually(t, 10*time.Second, "pgbouncer to listen", func() bool {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return addr
}

// Behind PgBouncer in transaction mode: without the exec query mode the CLI fails on
// the pooler's shared prepared statements and says what to set; with it, enqueues
// work every time, and so does the HTTP intake; the runner delivers on notifications when its listener has a
// direct connection (HERALD_LISTEN_URL), and without one says LISTEN is deaf (log
// and /healthz) and delivers by polling every HERALD_DEAF_POLL_INTERVAL.
func TestBehindPgBouncer(t *testing.T) {
	t.Parallel()
	direct := testdb.New(t)
	pool := testdb.Pool(t, direct)
	bouncer := startPgBouncer(t)
	u, _ := url.Parse(direct)
	u.Host = bouncer
	pooled := u.String()
	q := u.Query()
	q.Set("default_query_exec_mode", "exec")
	u.RawQuery = q.Encode()
	pooledExec := u.String()

	cli := func(dbURL string, args ...string) (string, error) {
		cmd := exec.Command(buildHerald(t), args...)
		cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	enqueue := []string{"enqueue", "--channel", "email", "--recipient", "ana@example.com", "--payload", `{"subject":"s","text":"t"}`}

	// Misconfigured: the second CLI run meets the first one's prepared statement.
	var failure string
	for range 4 {
		if out, err := cli(pooled, enqueue...); err != nil {
			failure = out
			break
		}
	}
	if !strings.Contains(failure, "default_query_exec_mode=exec") {
		t.Fatalf("through PgBouncer without exec mode, no run failed with the fix named: %q", failure)
	}
	mustExec(t, pool, `DELETE FROM herald.messages`)

	for i := range 5 {
		if out, err := cli(pooledExec, enqueue...); err != nil {
			t.Fatalf("enqueue %d through PgBouncer: %v\n%s", i, err, out)
		}
	}
	if out, err := cli(pooledExec, "stats"); err != nil || !strings.Contains(out, "email") {
		t.Fatalf("stats through PgBouncer: %v\n%s", err, out)
	}

	// The HTTP intake through PgBouncer: each request names its producer in the
	// same pipelined transaction (herald.producer), which transaction pooling keeps.
	addr := freeAddr(t)
	serve, serveLogs := runnerProcessArgs(t, pooledExec, []string{"serve"}, "HERALD_HTTP_ADDR="+addr, "HERALD_INTAKE_TOKENS=svc:tok-bouncer")
	waitHTTP(t, addr)
	for i := range 3 {
		var ok struct{ ID int64 }
		if code := do(t, "POST", "http://"+addr+"/v1/messages", "application/json", goodEmail,
			map[string]string{"Authorization": "Bearer tok-bouncer"}, &ok); code != 202 || ok.ID == 0 {
			t.Fatalf("intake request %d through PgBouncer: %d\n%s", i, code, serveLogs.String())
		}
		if code := do(t, "GET", fmt.Sprintf("http://%s/v1/messages/%d", addr, ok.ID), "", "",
			map[string]string{"Authorization": "Bearer tok-bouncer"}, nil); code != 200 {
			t.Fatalf("status %d through PgBouncer: %d", ok.ID, code)
		}
	}
	waitExit(t, serve, serveLogs, 10*time.Second)
	if n := countWhere(t, pool, `producer = 'intake:svc'`); n != 3 {
		t.Fatalf("%d intake messages stored, want 3", n)
	}

	// A runner whose pool goes through PgBouncer and whose listener connects
	// directly is woken by notifications: with a 1-minute poll, a delivery within
	// seconds can only come from one.
	for _, c := range []struct {
		name   string
		listen string
	}{{"direct listener", direct}, {"deaf listener", ""}} {
		sink := filepath.Join(t.TempDir(), "sent.jsonl")
		addr := freeAddr(t)
		env := []string{"HERALD_SENDER_EMAIL=sink:" + sink, "HERALD_HTTP_ADDR=" + addr, "HERALD_INTAKE=off",
			"HERALD_POLL_INTERVAL=1m", "HERALD_DEAF_POLL_INTERVAL=200ms"}
		if c.listen != "" {
			env = append(env, "HERALD_LISTEN_URL="+c.listen)
		}
		cmd, logs := runnerProcessArgs(t, pooledExec, []string{"run"}, env...)
		waitHTTP(t, addr)
		var health map[string]string
		eventually(t, 10*time.Second, c.name+": the listen check", func() bool {
			do(t, "GET", "http://"+addr+"/healthz", "", "", nil, &health)
			return strings.Contains(logs.String(), `"listening"`) &&
				(c.listen != "" || strings.HasPrefix(health["listener"], "deaf"))
		})
		if c.listen != "" && (health["listener"] != "connected" || health["claims"] != "turning") {
			t.Fatalf("%s: /healthz %v", c.name, health)
		}
		var live map[string]string
		if code := do(t, "GET", "http://"+addr+"/livez", "", "", nil, &live); code != 200 || live["claims"] != "turning" {
			t.Fatalf("%s: /livez %d %v", c.name, code, live)
		}
		if c.listen == "" && !strings.Contains(logs.String(), "LISTEN receives no notifications") {
			t.Fatalf("%s: no word of the deaf LISTEN in the logs:\n%s", c.name, logs.String())
		}
		before := countLines(t, sink)
		out, err := cli(pooledExec, enqueue...)
		if err != nil {
			t.Fatalf("%s: enqueue: %v %s", c.name, err, out)
		}
		eventually(t, 15*time.Second, c.name+": the delivery", func() bool { return countLines(t, sink) > before })
		waitExit(t, cmd, logs, 15*time.Second)
	}
	if n := countWhere(t, pool, `status <> 'sent'`); n != 0 {
		t.Fatalf("%d messages not sent", n)
	}
}

// countLines counts the JSON lines a sink file holds (0 when it does not exist yet).
func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if json.Valid([]byte(line)) {
			n++
		}
	}
	return n
}
