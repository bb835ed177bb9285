// Package sql holds herald's SQL and installs it with tern.
//
// # Layout
//
// sql/schema holds the numbered migrations (tables, types, indexes, roles, grants),
// applied once each, in order, and immutable once released. sql/functions holds one
// function or view per file and sql/triggers one trigger per file; sql/install.sql
// is a tern code package that includes them all in dependency order. The code is not
// a migration: it is installed as a whole, in one transaction, after the migrations,
// and again whenever its files change (CREATE OR REPLACE; functions of schema herald
// that the package no longer defines are dropped by it).
//
// # Installing
//
// Migrate runs the migrations and then installs the code unless the database already
// holds the code of this build, which it knows by the hash recorded in
// herald.installed_code. Without the herald binary the same two steps are
//
//	tern migrate -c tern.conf -m sql/schema
//	tern code install -c tern.conf sql
package sql

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed schema/*.sql functions/*.sql triggers/*.sql install.sql
var files embed.FS

// VersionTable is where tern records the applied migration version; tern.conf names
// the same table so that `tern migrate` and `herald migrate` agree.
const VersionTable = "public.herald_schema_version"

// hash returns a hex SHA-256 over the path and content of the embedded files under
// the given roots, in path order.
func hash(roots ...string) string {
	var paths []string
	for _, root := range roots {
		_ = fs.WalkDir(files, root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				paths = append(paths, p)
			}
			return err
		})
	}
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		data, _ := files.ReadFile(p)
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Hash identifies everything this build installs: migrations and code.
func Hash() string { return hash("schema", "functions", "triggers", "install.sql") }

// CodeHash identifies the code package (install.sql, functions, triggers); it is what
// herald.installed_code records.
func CodeHash() string { return hash("functions", "triggers", "install.sql") }

func newMigrator(ctx context.Context, conn *pgx.Conn) (*migrate.Migrator, error) {
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return nil, fmt.Errorf("herald sql: %w", err)
	}
	schema, err := fs.Sub(files, "schema")
	if err != nil {
		return nil, fmt.Errorf("herald sql: %w", err)
	}
	if err := m.LoadMigrations(schema); err != nil {
		return nil, fmt.Errorf("herald sql: loading migrations: %w", err)
	}
	return m, nil
}

// Migrate brings the database behind conn to the latest schema and installs the code
// of this build when the database holds other code (or when force is set). Running
// it again changes nothing. It reports whether the code was installed.
func Migrate(ctx context.Context, conn *pgx.Conn, force bool) (installed bool, err error) {
	m, err := newMigrator(ctx, conn)
	if err != nil {
		return false, err
	}
	current, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return false, fmt.Errorf("herald sql: %w", err)
	}
	if latest := int32(len(m.Migrations)); current > latest {
		return false, fmt.Errorf("herald sql: the database is at schema version %d, past this build's %d: "+
			"it was made by a newer build, or by a development build before the baseline (create it anew)", current, latest)
	}
	if err := m.Migrate(ctx); err != nil {
		return false, fmt.Errorf("herald sql: migrating: %w", err)
	}
	if !force {
		if current, err := codeCurrent(ctx, conn); err != nil || current {
			return false, err
		}
	}
	return true, InstallCode(ctx, conn)
}

// InstallCode applies the code package (sql/install.sql) in one transaction, under
// tern's advisory lock, and records its hash in herald.installed_code.
func InstallCode(ctx context.Context, conn *pgx.Conn) error {
	sub, err := fs.Sub(files, ".")
	if err != nil {
		return fmt.Errorf("herald sql: %w", err)
	}
	pkg, err := migrate.LoadCodePackage(sub)
	if err != nil {
		return fmt.Errorf("herald sql: loading install.sql: %w", err)
	}
	code, err := pkg.Eval(map[string]any{})
	if err != nil {
		return fmt.Errorf("herald sql: %w", err)
	}
	code += fmt.Sprintf("\nUPDATE herald.installed_code SET hash = '%s';\n", CodeHash())
	if err := migrate.LockExecTx(ctx, conn, code); err != nil {
		var pg *pgconn.PgError
		if errors.As(err, &pg) && (pg.Code == "42P01" || pg.Code == "42703" || pg.Code == "42704") { // undefined table, column or type
			return fmt.Errorf("herald sql: installing the code: %w (the tables were made by an earlier development "+
				"build: until the first release the baseline migrations change in place, so create the database anew; "+
				"the local cluster: tests/devdb.sh destroy, then make run)", err)
		}
		return fmt.Errorf("herald sql: installing the code: %w", err)
	}
	return nil
}

// Versions returns the migration version the database is at, the latest this build
// knows, and whether the installed code is this build's.
func Versions(ctx context.Context, conn *pgx.Conn) (current, latest int32, isCurrent bool, err error) {
	m, err := newMigrator(ctx, conn)
	if err != nil {
		return 0, 0, false, err
	}
	if current, err = m.GetCurrentVersion(ctx); err != nil {
		return 0, 0, false, err
	}
	if current > 0 {
		if isCurrent, err = codeCurrent(ctx, conn); err != nil {
			return 0, 0, false, err
		}
	}
	return current, int32(len(m.Migrations)), isCurrent, nil
}

// codeCurrent reports whether herald.installed_code records this build's CodeHash.
func codeCurrent(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var h *string
	err := conn.QueryRow(ctx, `SELECT hash FROM herald.installed_code`).Scan(&h)
	if err != nil && err != pgx.ErrNoRows {
		return false, fmt.Errorf("herald sql: reading herald.installed_code: %w", err)
	}
	return h != nil && *h == CodeHash(), nil
}
