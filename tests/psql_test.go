package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/herald/herald/tests/testdb"
)

// pgTool finds a PostgreSQL client program: on PATH, or in the newest
// /usr/lib/postgresql/*/bin.
func pgTool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	sort.Strings(dirs)
	if len(dirs) == 0 {
		t.Fatalf("%s not found on PATH nor in /usr/lib/postgresql/*/bin (install postgresql-client)", name)
	}
	return dirs[len(dirs)-1]
}

// psql runs a script through the psql client and returns its output.
func psql(t *testing.T, url, script string, vars ...string) (string, error) {
	t.Helper()
	args := []string{"-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose", "-d", url}
	for _, v := range vars {
		args = append(args, "-v", v)
	}
	cmd := exec.Command(pgTool(t, "psql"), args...)
	cmd.Stdin = strings.NewReader(script)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The contract works from outside Go: psql enqueues, claims, completes and reads
// status, and sees herald's SQLSTATE and field on bad input.
func TestContractFromPsql(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	out, err := psql(t, url, `
SELECT herald.enqueue('email', 'ana@example.com', '{"subject": "Hi", "text": "Hello Ana"}') AS id \gset
SELECT status FROM herald.status(:id);
SELECT count(*) FROM herald.claim_batch('psql-worker', 10) \gset claimed_
SELECT herald.complete(id, lease_token, 'provider-42') FROM herald.messages WHERE id = :id;
SELECT status || ' ' || provider_message_id FROM herald.status(:id);
`)
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	lines := strings.Fields(out)
	if strings.Join(lines, " ") != "queued t sent provider-42" {
		t.Fatalf("psql output %q", out)
	}

	out, err = psql(t, url, `SELECT herald.enqueue('sms', '555-0100', '{"text": "hi"}');`)
	if err == nil {
		t.Fatalf("bad enqueue succeeded: %s", out)
	}
	if !strings.Contains(out, "22V02") || !strings.Contains(out, "COLUMN NAME:  recipient") {
		t.Fatalf("psql error output lacks SQLSTATE 22V02 and the field:\n%s", out)
	}
	pool := testdb.Pool(t, url)
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 1 {
		t.Fatalf("%d rows after one good and one bad enqueue", n)
	}
	_ = context.Background()
}
