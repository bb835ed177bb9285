// Package sql holds herald's SQL — the numbered schema migrations, the functions and
// the triggers — and installs it with tern.
//
// # Layout
//
// On disk, sql/schema holds the numbered migrations, sql/functions one function or
// view per file and sql/triggers one trigger per file. tern reads numbered migrations
// from the top of the folder it is given and every .sql file in a subfolder as a
// template, so the tern CLI is pointed at sql/ itself, where 001_queue.sql and the
// others are symbolic links into schema/. The embedded copy used by `herald migrate`
// is laid out the same way by FS.
//
// # Code migrations
//
// Tables change only through new numbered migrations. Functions, views and triggers
// are installed by the newest migration whose name ends in "_code.sql", which pulls
// each file in as a template; ReinstallCode re-applies that migration as a whole, so
// a DBA can edit a file in sql/functions and re-apply all of them.
package sql

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed schema/*.sql functions/*.sql triggers/*.sql
var files embed.FS

// VersionTable is where tern records the applied migration version; tern.conf names
// the same table so that `tern migrate` and `herald migrate` agree.
const VersionTable = "public.herald_schema_version"

// FS returns herald's SQL files laid out for tern: the numbered migrations of
// schema/ at the top, and schema/, functions/ and triggers/ as template folders.
func FS() fs.FS {
	out := fstest.MapFS{}
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		out[p] = &fstest.MapFile{Data: data, Mode: 0o444}
		if path.Dir(p) == "schema" {
			out[path.Base(p)] = &fstest.MapFile{Data: data, Mode: 0o444}
		}
		return nil
	})
	if err != nil {
		panic(fmt.Sprintf("herald sql: reading embedded files: %v", err)) // the embed is fixed at build time
	}
	return out
}

// Hash returns a hex SHA-256 over the path and content of every SQL file under sql/,
// in path order: it changes whenever any migration, function or trigger changes.
func Hash() string {
	var paths []string
	_ = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, p)
		}
		return err
	})
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		data, _ := files.ReadFile(p)
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func newMigrator(ctx context.Context, conn *pgx.Conn) (*migrate.Migrator, error) {
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return nil, fmt.Errorf("herald sql: %w", err)
	}
	if err := m.LoadMigrations(FS()); err != nil {
		return nil, fmt.Errorf("herald sql: loading migrations: %w", err)
	}
	return m, nil
}

// Migrate brings the database behind conn to migration version target, or to the
// latest version when target is 0. Running it again changes nothing.
func Migrate(ctx context.Context, conn *pgx.Conn, target int32) error {
	m, err := newMigrator(ctx, conn)
	if err != nil {
		return err
	}
	if target == 0 {
		target = int32(len(m.Migrations))
	}
	if err := m.MigrateTo(ctx, target); err != nil {
		return fmt.Errorf("herald sql: migrating to version %d: %w", target, err)
	}
	return nil
}

// Versions returns the version the database is at and the latest version this build
// knows.
func Versions(ctx context.Context, conn *pgx.Conn) (current, latest int32, err error) {
	m, err := newMigrator(ctx, conn)
	if err != nil {
		return 0, 0, err
	}
	current, err = m.GetCurrentVersion(ctx)
	return current, int32(len(m.Migrations)), err
}

// ReinstallCode re-applies, in one transaction, the newest code migration (the
// functions, views and triggers) that the database has already reached. It refuses a
// database that is not migrated that far.
func ReinstallCode(ctx context.Context, conn *pgx.Conn) error {
	m, err := newMigrator(ctx, conn)
	if err != nil {
		return err
	}
	current, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return fmt.Errorf("herald sql: %w", err)
	}
	var code *migrate.Migration
	for _, mig := range m.Migrations {
		if mig.Sequence <= current && strings.HasSuffix(mig.Name, "_code.sql") {
			code = mig
		}
	}
	if code == nil {
		return fmt.Errorf("herald sql: database is at version %d, before any code migration; run migrate first", current)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("herald sql: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, code.UpSQL); err != nil {
		return fmt.Errorf("herald sql: re-applying %s: %w", code.Name, err)
	}
	return tx.Commit(ctx)
}
