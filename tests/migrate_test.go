package tests

import (
	"context"
	"fmt"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	heraldsql "github.com/herald/herald/sql"
	"github.com/herald/herald/tests/testdb"
)

// schemaFile is the committed pg_dump --schema-only --no-owner of an installed herald
// (PostgreSQL 15), so that every schema change shows up in review as a diff.
const schemaFile = "schema.sql"

// schemaDump returns pg_dump --schema-only --no-owner of the database, without the
// lines that differ between two dumps of the same schema (the versions, psql's
// random \restrict key).
func schemaDump(t *testing.T, url string) string {
	t.Helper()
	out, err := exec.Command(pgTool(t, "pg_dump"), "--schema-only", "--no-owner", "--dbname", url).CombinedOutput()
	if err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	var keep []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, `\restrict`) || strings.HasPrefix(line, `\unrestrict`) || strings.HasPrefix(line, "-- Dumped ") {
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

func migrateURL(t *testing.T, url string, force bool) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	installed, err := heraldsql.Migrate(ctx, conn, force)
	if err != nil {
		t.Fatal(err)
	}
	return installed
}

// A fresh install, a second run, a forced re-install of the code, and the tern CLI
// all give the same pg_dump --schema-only, and that is the committed tests/schema.sql.
// HERALD_UPDATE_SCHEMA=1 rewrites the file instead of comparing (then review the diff).
func TestInstallPathsGiveTheCommittedSchema(t *testing.T) {
	t.Parallel()
	fresh := testdb.EmptyDatabase(t)
	if !migrateURL(t, fresh, false) {
		t.Fatal("a fresh install did not install the code")
	}
	want := schemaDump(t, fresh)
	if !strings.Contains(want, "CREATE FUNCTION herald.claim_batch") || !strings.Contains(want, "messages_claim_idx") {
		t.Fatal("the dump of a fresh install lacks herald's objects")
	}
	path := filepath.Join(testdb.RepoRoot(), "tests", schemaFile)
	if os.Getenv("HERALD_UPDATE_SCHEMA") != "" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sameSchema(t, "tests/schema.sql (HERALD_UPDATE_SCHEMA=1 go test ./tests -run TestInstallPaths rewrites it)", string(committed), want)

	if migrateURL(t, fresh, false) {
		t.Error("herald migrate re-installed code whose hash had not changed")
	}
	sameSchema(t, "herald migrate run twice", want, schemaDump(t, fresh))
	if !migrateURL(t, fresh, true) {
		t.Error("herald migrate --reinstall-code did not install")
	}
	sameSchema(t, "migrate --reinstall-code", want, schemaDump(t, fresh))

	viaTern := testdb.EmptyDatabase(t)
	ternInstall(t, viaTern)
	sameSchema(t, "tern migrate + tern code install", want, schemaDump(t, viaTern))
	ternInstall(t, viaTern)
	sameSchema(t, "tern run twice", want, schemaDump(t, viaTern))
	if !migrateURL(t, viaTern, false) {
		t.Error("herald migrate after an install by hand did not re-install its own code")
	}
	sameSchema(t, "herald migrate after tern", want, schemaDump(t, viaTern))
}

// A function the code package no longer defines is dropped when it is installed,
// and one a DBA edited by hand is put back.
func TestInstallDropsStaleFunctions(t *testing.T) {
	ctx, pool := setup(t)
	if _, err := pool.Exec(ctx, `
		CREATE FUNCTION herald.left_over(x integer) RETURNS integer LANGUAGE sql AS 'SELECT x';
		CREATE OR REPLACE FUNCTION herald._key_hash(ordering_key text, recipient text) RETURNS integer
		  LANGUAGE sql IMMUTABLE AS 'SELECT 7'`); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if err := heraldsql.InstallCode(ctx, conn.Conn()); err != nil {
		t.Fatal(err)
	}
	var stale bool
	var hash int
	if err := pool.QueryRow(ctx, `SELECT to_regprocedure('herald.left_over(integer)') IS NOT NULL,
		herald._key_hash(NULL, 'x')`).Scan(&stale, &hash); err != nil {
		t.Fatal(err)
	}
	if stale || hash == 7 {
		t.Fatalf("after install: left_over present %v, _key_hash edited %v", stale, hash == 7)
	}
}

// ternInstall installs herald with the tern CLI, as a DBA without our binary would:
// the migrations, then the code package.
func ternInstall(t *testing.T, url string) {
	t.Helper()
	bin := os.Getenv("HERALD_TERN")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("tern"); err != nil {
			t.Fatal("the tern CLI is not installed: `make test` installs it into .bin/ (or set HERALD_TERN)")
		}
	}
	root := testdb.RepoRoot()
	conf := filepath.Join(root, "tern.conf")
	for _, args := range [][]string{
		{"migrate", "-c", conf, "-m", filepath.Join(root, "sql", "schema")},
		{"code", "install", "-c", conf, filepath.Join(root, "sql")},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "DATABASE_URL="+url)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("tern %s: %v\n%s", args[0], err, out)
		}
	}
}

// Every file of sql/functions and sql/triggers is included by sql/install.sql exactly
// once: a file that is not listed would never reach a database.
func TestInstallListsEveryFile(t *testing.T) {
	t.Parallel()
	root := testdb.RepoRoot()
	body, err := os.ReadFile(filepath.Join(root, "sql", "install.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"functions", "triggers"} {
		files, _ := filepath.Glob(filepath.Join(root, "sql", dir, "*.sql"))
		for _, f := range files {
			ref := `{{ template "` + dir + "/" + filepath.Base(f) + `" . }}`
			if n := strings.Count(string(body), ref); n != 1 {
				t.Errorf("install.sql includes %s %d times, want once", dir+"/"+filepath.Base(f), n)
			}
		}
	}
}

// Every function, table, view, sequence and type of schema herald has a COMMENT, so
// \df+ and \d+ explain herald inside psql.
func TestEveryObjectIsCommented(t *testing.T) {
	_, pool := setup(t)
	missing := scalar[string](t, pool, `
		SELECT coalesce(string_agg(name, ', ' ORDER BY name), '') FROM (
		  SELECT p.oid::regprocedure::text AS name FROM pg_proc p
		  WHERE p.pronamespace = 'herald'::regnamespace AND obj_description(p.oid, 'pg_proc') IS NULL
		  UNION ALL
		  SELECT c.oid::regclass::text FROM pg_class c
		  WHERE c.relnamespace = 'herald'::regnamespace AND c.relkind IN ('r', 'v', 'S')
		    AND obj_description(c.oid, 'pg_class') IS NULL
		    AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i'))
		  UNION ALL
		  SELECT t.oid::regtype::text FROM pg_type t
		  WHERE t.typnamespace = 'herald'::regnamespace AND t.typtype = 'c' AND t.typrelid IN
		    (SELECT oid FROM pg_class WHERE relkind = 'c') AND obj_description(t.oid, 'pg_type') IS NULL
		) m`)
	if missing != "" {
		t.Fatalf("objects without a COMMENT: %s", missing)
	}
}

// A database whose schema version is past this build's (a newer build, or a
// development build before the baseline) is refused with a reason, and not touched.
func TestMigrateRefusesANewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.EmptyDatabase(t)
	migrateURL(t, url, false)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE `+heraldsql.VersionTable+` SET version = 27`); err != nil {
		t.Fatal(err)
	}
	_, err = heraldsql.Migrate(ctx, conn, true)
	if err == nil || !strings.Contains(err.Error(), "past this build's") {
		t.Fatalf("migrating a database at version 27: %v", err)
	}
	var h *string
	if err := conn.QueryRow(ctx, `SELECT hash FROM herald.installed_code`).Scan(&h); err != nil || h == nil || *h != heraldsql.CodeHash() {
		t.Fatalf("the refused database's code was touched: %v %v", h, err)
	}
}

// A database made by an earlier development build of the baseline (here: a table
// the code needs is missing) is told so: the install fails, changes nothing, and the
// error says to create the database anew.
func TestInstallOnAnEarlierBaselineSaysWhy(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `DROP TABLE herald.suppressions CASCADE`) // and herald._suppression, which returns its rows
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	err = heraldsql.InstallCode(ctx, conn.Conn())
	if err == nil || !strings.Contains(err.Error(), "create the database anew") {
		t.Fatalf("install on an earlier baseline: %v", err)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM pg_proc WHERE proname = 'record_delivery_events'`); n != 1 {
		t.Fatalf("the failed install changed the functions (%d record_delivery_events)", n)
	}
}

// A runner on a database whose herald SQL code is another build's (a rolling upgrade
// half done: binaries first, or the migration first) says so in its log, naming both
// hashes, and in the herald_sql_code_matches gauge (0), sampled every stats interval,
// so a migration after it started is noticed too; when the code is its own again,
// the gauge is 1 and the log says so. It runs throughout.
func TestARunnerWatchesForAnotherBuildsCode(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	addr := freeAddr(t)
	_, logs := runnerProcessArgs(t, url, []string{"run"}, "HERALD_SENDER_EMAIL=noop", "HERALD_HTTP_ADDR="+addr,
		"HERALD_INTAKE=off", "HERALD_STATS_INTERVAL=100ms")
	waitHTTP(t, addr)
	target, _ := neturl.Parse("http://" + addr)
	metrics := httputil.NewSingleHostReverseProxy(target)
	matches := func() float64 { return metricValue(t, scrape(t, metrics), "herald_sql_code_matches") }
	eventually(t, 20*time.Second, "the gauge to say the code is the runner's", func() bool { return matches() == 1 })
	mustExec(t, pool, `UPDATE herald.installed_code SET hash = 'an-older-build'`)
	eventually(t, 20*time.Second, "the gauge to say the code is another build's", func() bool { return matches() == 0 })
	eventually(t, 20*time.Second, "the warning", func() bool {
		s := logs.String()
		return strings.Contains(s, "another build") && strings.Contains(s, "an-older-build") && strings.Contains(s, heraldsql.CodeHash())
	})
	mustExec(t, pool, `UPDATE herald.installed_code SET hash = $1`, heraldsql.CodeHash())
	eventually(t, 20*time.Second, "the gauge and the log to say it is the runner's again", func() bool {
		return matches() == 1 && strings.Contains(logs.String(), "this binary's again")
	})
}

// Managed PostgreSQL (RDS, Cloud SQL, Azure, Supabase, Neon) gives no superuser: its
// admin role has CREATEROLE and CREATEDB and owns the database. herald migrate
// installs there as that role, and a runner and a producer it creates work: claim,
// send, report, status, the log.
func TestInstallsWithoutASuperuser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	server := testdb.ServerURL(t)
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := fmt.Sprintf("managed_%d", time.Now().UnixNano())
	for _, q := range []string{
		`CREATE ROLE ` + name + ` LOGIN PASSWORD 'managed-pw' CREATEROLE CREATEDB NOSUPERUSER`,
		`CREATE DATABASE ` + name + ` OWNER ` + name,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		admin, err := pgx.Connect(context.Background(), server)
		if err != nil {
			return
		}
		defer admin.Close(context.Background())
		admin.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
		admin.Exec(context.Background(), `DROP OWNED BY `+name+`_app`)
		admin.Exec(context.Background(), `DROP ROLE IF EXISTS `+name+`_app`)
		admin.Exec(context.Background(), `DROP ROLE IF EXISTS `+name)
	})
	u, err := neturl.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	u.User, u.Path = neturl.UserPassword(name, "managed-pw"), "/"+name
	owner := u.String()
	migrateURL(t, owner, false)
	pool := testdb.Pool(t, owner)
	if super := scalar[bool](t, pool, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`); super {
		t.Fatal("the installing role is a superuser")
	}
	mustExec(t, pool, `CREATE ROLE `+name+`_app LOGIN PASSWORD 'app-pw' IN ROLE herald_worker, herald_producer`)
	u.User = neturl.UserPassword(name+"_app", "app-pw")
	app := testdb.Pool(t, u.String())
	id := scalar[int64](t, app, `SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"s","text":"t"}')`)
	var token int64
	if err := app.QueryRow(ctx, `SELECT lease_token FROM herald.claim_batch('managed', 10)`).Scan(&token); err != nil {
		t.Fatal(err)
	}
	if !scalar[bool](t, app, `SELECT herald.complete($1::bigint, $2::bigint, $3::text)`, id, token, "pm-1") {
		t.Fatal("complete refused")
	}
	if got := scalar[string](t, app, `SELECT status FROM herald.status($1)`, id); got != "sent" {
		t.Fatalf("status %s", got)
	}
	if n := scalar[int64](t, app, `SELECT herald.log_sequence(100)`); n != 2 {
		t.Fatalf("the log numbered %d events, want accepted and sent", n)
	}
	if key := messageIDKey(t, app); len(key) != 32 {
		t.Fatalf("the runner role reads a Message-ID key of %d bytes", len(key))
	}
}
