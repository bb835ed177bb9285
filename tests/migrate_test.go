package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	heraldsql "github.com/herald/herald/sql"
	"github.com/herald/herald/tests/testdb"
)

// schemaDump returns pg_dump --schema-only of the database, without the lines that
// differ between two dumps of the same schema (psql's random \restrict key).
func schemaDump(t *testing.T, url string) string {
	t.Helper()
	out, err := exec.Command(pgTool(t, "pg_dump"), "--schema-only", "--dbname", url).CombinedOutput()
	if err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	var keep []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, `\restrict`) || strings.HasPrefix(line, `\unrestrict`) {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}

// sameSchema fails with the first differing line.
func sameSchema(t *testing.T, what, want, got string) {
	t.Helper()
	if want == got {
		return
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) && i < len(g); i++ {
		if w[i] != g[i] {
			t.Fatalf("%s: schema differs at line %d:\n want %q\n  got %q", what, i+1, w[i], g[i])
		}
	}
	t.Fatalf("%s: schema differs in length: %d vs %d lines", what, len(w), len(g))
}

func migrateURL(t *testing.T, url string, target int32) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := heraldsql.Migrate(ctx, conn, target); err != nil {
		t.Fatal(err)
	}
}

// A fresh install, a second run, an upgrade one version at a time, a re-install of
// the code, and the tern CLI all give the same pg_dump --schema-only.
func TestInstallPathsGiveTheSameSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	fresh := testdb.EmptyDatabase(t)
	migrateURL(t, fresh, 0)
	want := schemaDump(t, fresh)
	if !strings.Contains(want, "CREATE FUNCTION herald.claim_batch") || !strings.Contains(want, "messages_claim_idx") {
		t.Fatal("the dump of a fresh install lacks herald's objects")
	}

	migrateURL(t, fresh, 0)
	sameSchema(t, "herald migrate run twice", want, schemaDump(t, fresh))

	conn, err := pgx.Connect(ctx, fresh)
	if err != nil {
		t.Fatal(err)
	}
	if err := heraldsql.ReinstallCode(ctx, conn); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	sameSchema(t, "migrate --reinstall-code", want, schemaDump(t, fresh))

	stepwise := testdb.EmptyDatabase(t)
	_, latest, err := func() (int32, int32, error) {
		c, err := pgx.Connect(ctx, stepwise)
		if err != nil {
			return 0, 0, err
		}
		defer c.Close(ctx)
		return heraldsql.Versions(ctx, c)
	}()
	if err != nil {
		t.Fatal(err)
	}
	for v := int32(1); v <= latest; v++ {
		migrateURL(t, stepwise, v)
	}
	sameSchema(t, "upgrade one version at a time", want, schemaDump(t, stepwise))

	viaTern := testdb.EmptyDatabase(t)
	ternMigrate(t, viaTern)
	sameSchema(t, "tern migrate -c tern.conf -m sql", want, schemaDump(t, viaTern))
	ternMigrate(t, viaTern)
	sameSchema(t, "tern migrate run twice", want, schemaDump(t, viaTern))
}

// ternMigrate installs herald with the tern CLI, as a DBA without our binary would.
func ternMigrate(t *testing.T, url string) {
	t.Helper()
	bin := os.Getenv("HERALD_TERN")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("tern"); err != nil {
			t.Fatal("the tern CLI is not installed: `make test` installs it into .bin/ (or set HERALD_TERN)")
		}
	}
	root := testdb.RepoRoot()
	cmd := exec.Command(bin, "migrate", "-c", filepath.Join(root, "tern.conf"), "-m", filepath.Join(root, "sql"))
	cmd.Env = append(os.Environ(), "DATABASE_URL="+url)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tern migrate: %v\n%s", err, out)
	}
}

// Every file of sql/functions and sql/triggers is installed by the newest code
// migration, exactly once: a new file that is not listed would never reach a database.
func TestCodeMigrationListsEveryFile(t *testing.T) {
	t.Parallel()
	root := testdb.RepoRoot()
	codes, _ := filepath.Glob(filepath.Join(root, "sql", "schema", "*_code.sql"))
	if len(codes) == 0 {
		t.Fatal("no code migration")
	}
	newest := codes[len(codes)-1]
	body, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"functions", "triggers"} {
		files, _ := filepath.Glob(filepath.Join(root, "sql", dir, "*.sql"))
		for _, f := range files {
			ref := `{{ template "` + dir + "/" + filepath.Base(f) + `" . }}`
			if n := strings.Count(string(body), ref); n != 1 {
				t.Errorf("%s includes %s %d times, want once", filepath.Base(newest), dir+"/"+filepath.Base(f), n)
			}
		}
	}
}
