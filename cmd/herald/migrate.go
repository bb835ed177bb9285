package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5"

	heraldsql "github.com/herald/herald/sql"
)

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("herald migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.Int("target", 0, "migrate to this version instead of the latest (forward only)")
	reinstall := fs.Bool("reinstall-code", false, "after migrating, re-apply all functions, views and triggers (CREATE OR REPLACE)")
	status := fs.Bool("status", false, "only print the current and latest version (migrates nothing; creates the empty version table if missing)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: herald migrate [--target N] [--reinstall-code] [--status]")
		fmt.Fprintln(stderr, "\nBrings the database (DATABASE_URL or PG*) to the latest herald schema. Idempotent.")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *target < 0 {
		fs.Usage()
		return exitUsage
	}

	conn, err := pgx.Connect(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		fmt.Fprintf(stderr, "herald migrate: cannot reach the database: %v\n", err)
		return exitDatabase
	}
	defer conn.Close(context.Background())

	if !*status {
		if err := heraldsql.Migrate(ctx, conn, int32(*target)); err != nil {
			fmt.Fprintf(stderr, "herald migrate: %v\n", err)
			return exitFailure
		}
		if *reinstall {
			if err := heraldsql.ReinstallCode(ctx, conn); err != nil {
				fmt.Fprintf(stderr, "herald migrate: %v\n", err)
				return exitFailure
			}
		}
	}
	current, latest, err := heraldsql.Versions(ctx, conn)
	if err != nil {
		fmt.Fprintf(stderr, "herald migrate: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "herald schema at version %d (latest %d)\n", current, latest)
	return exitOK
}
