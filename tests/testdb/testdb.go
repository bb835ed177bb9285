// Package testdb gives each test its own PostgreSQL database with herald installed.
//
// It wraps pgtestdb: the first test of a run migrates a template database with
// herald's embedded SQL, and every test gets a clone of it (tens of milliseconds),
// dropped when the test passes. The template is keyed by Migrator.Hash, a hash of
// every file under sql/, so editing a function file gives a fresh template.
//
// The server is DATABASE_URL; when that is unset, tests/devdb.sh starts the
// project-local cluster (as `make test` does).
package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", used by pgtestdb
	"github.com/peterldowns/pgtestdb"

	heraldsql "github.com/herald/herald/sql"
)

// Migrator installs herald into pgtestdb's template database. It implements
// pgtestdb.Migrator.
type Migrator struct{}

// Hash identifies the template: a hash of every SQL file under sql/.
func (Migrator) Hash() (string, error) { return heraldsql.Hash(), nil }

// Migrate runs every herald migration on the new template database.
func (Migrator) Migrate(ctx context.Context, _ *sql.DB, conf pgtestdb.Config) error {
	conn, err := pgx.Connect(ctx, conf.URL())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = heraldsql.Migrate(ctx, conn, false)
	return err
}

var (
	serverOnce sync.Once
	serverURL  string
	serverErr  error
)

// ServerURL returns the URL of the PostgreSQL server tests run against: DATABASE_URL,
// or the project-local cluster, started on first use.
func ServerURL(t testing.TB) string {
	t.Helper()
	serverOnce.Do(func() {
		if u := os.Getenv("DATABASE_URL"); u != "" {
			serverURL = u
			return
		}
		out, err := exec.Command(filepath.Join(RepoRoot(), "tests", "devdb.sh"), "up").Output()
		if err != nil {
			serverErr = fmt.Errorf("DATABASE_URL is unset and tests/devdb.sh up failed: %w", err)
			return
		}
		serverURL = strings.TrimSpace(string(out))
	})
	if serverErr != nil {
		t.Fatal(serverErr)
	}
	return serverURL
}

// RepoRoot returns the project's top folder.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Config returns the pgtestdb configuration for the test server: a superuser test
// role (herald's migration creates roles) and connections terminated at cleanup.
func Config(t testing.TB) pgtestdb.Config {
	t.Helper()
	u, err := url.Parse(ServerURL(t))
	if err != nil {
		t.Fatalf("testdb: bad server URL: %v", err)
	}
	pw, _ := u.User.Password()
	conf := pgtestdb.Config{
		DriverName:                "pgx",
		Host:                      u.Hostname(),
		Port:                      u.Port(),
		User:                      u.User.Username(),
		Password:                  pw,
		Database:                  strings.TrimPrefix(u.Path, "/"),
		Options:                   u.RawQuery,
		ForceTerminateConnections: true,
		TestRole: &pgtestdb.Role{
			Username:     "herald_test",
			Password:     "herald_test",
			Capabilities: "SUPERUSER",
		},
	}
	if conf.Port == "" {
		conf.Port = "5432"
	}
	if conf.Database == "" {
		conf.Database = "postgres"
	}
	return conf
}

// New creates a fresh herald database for the test and returns its URL.
func New(t testing.TB) string {
	t.Helper()
	return pgtestdb.Custom(t, Config(t), Migrator{}).URL()
}

// NewPool creates a fresh herald database for the test and returns a pool on it,
// closed when the test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return Pool(t, New(t))
}

// Pool opens a pool of up to 32 connections on url, closed when the test ends.
func Pool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	conf, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	conf.MaxConns = 32 // concurrency tests hold several connections at once
	pool, err := pgxpool.NewWithConfig(context.Background(), conf)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// EmptyDatabase creates an empty database (nothing installed) for tests of the
// installers themselves, and returns its URL. It is dropped when the test ends.
func EmptyDatabase(t testing.TB) string {
	t.Helper()
	return pgtestdb.Custom(t, Config(t), pgtestdb.NoopMigrator{}).URL()
}
