package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/herald/herald/tests/testdb"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := dispatch(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// herald migrate installs herald into an empty database, is idempotent, and tells
// usage errors and an unreachable database apart by exit code.
func TestMigrateCommand(t *testing.T) {
	url := testdb.EmptyDatabase(t)
	t.Setenv("DATABASE_URL", url)

	code, out, errOut := run(t, "migrate", "--status")
	var latest int
	if _, err := fmt.Sscanf(out, "herald schema at version 0 (latest %d)", &latest); code != exitOK || err != nil || latest < 3 {
		t.Fatalf("migrate --status on an empty database: %d %q %q", code, out, errOut)
	}
	done := fmt.Sprintf("version %d (latest %d)", latest, latest)
	for i := 0; i < 2; i++ {
		code, out, errOut = run(t, "migrate")
		if code != exitOK || !strings.Contains(out, done) {
			t.Fatalf("migrate run %d: %d %q %q", i+1, code, out, errOut)
		}
	}
	if code, out, errOut = run(t, "migrate", "--reinstall-code"); code != exitOK {
		t.Fatalf("migrate --reinstall-code: %d %q %q", code, out, errOut)
	}
	if code, _, _ = run(t, "migrate", "--bogus"); code != exitUsage {
		t.Fatalf("bad flag: exit %d, want %d", code, exitUsage)
	}
	if code, _, _ = run(t, "frobnicate"); code != exitUsage {
		t.Fatalf("unknown command: exit %d, want %d", code, exitUsage)
	}
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	if code, _, errOut = run(t, "migrate"); code != exitDatabase || !strings.Contains(errOut, "cannot reach the database") {
		t.Fatalf("unreachable database: exit %d %q, want %d", code, errOut, exitDatabase)
	}
}
