package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
