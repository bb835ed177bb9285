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
	reinstall := fs.Bool("reinstall-code", false, "install the functions, views and triggers even when the database holds this build's code")
	status := fs.Bool("status", false, "only print the schema version and whether the code is current (changes nothing but creating the empty version table)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: herald migrate [--reinstall-code] [--status]")
		fmt.Fprintln(stderr, "\nBrings the database (DATABASE_URL or PG*) to the latest herald schema and installs")
		fmt.Fprintln(stderr, "this build's functions, views and triggers when they differ. Idempotent.")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}

	conn, err := pgx.Connect(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		fmt.Fprintf(stderr, "herald migrate: cannot reach the database: %v\n", err)
		return exitDatabase
	}
	defer conn.Close(context.Background())

	if !*status {
		if _, err := heraldsql.Migrate(ctx, conn, *reinstall); err != nil {
			fmt.Fprintf(stderr, "herald migrate: %v\n", err)
			return exitFailure
		}
	}
	current, latest, codeCurrent, err := heraldsql.Versions(ctx, conn)
	if err != nil {
		fmt.Fprintf(stderr, "herald migrate: %v\n", err)
		return exitFailure
	}
	code := "current"
	if !codeCurrent {
		code = "not this build's (run herald migrate)"
	}
	fmt.Fprintf(stdout, "herald schema at version %d (latest %d); code %s\n", current, latest, code)
	return exitOK
}
