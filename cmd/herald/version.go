package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	heraldsql "github.com/herald/herald/sql"
)

// runVersion is `herald version`: the module version, the commit it was built from
// (with "+dirty" when the tree had changes), the Go version, and the hash of the SQL
// code this binary installs (herald.installed_code).
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: herald version")
		return exitUsage
	}
	version, commit := "(devel)", "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		dirty := ""
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		commit += dirty
	}
	fmt.Fprintf(stdout, "herald %s\ncommit %s\n%s\nsql code %s\n", version, commit, runtime.Version(), heraldsql.CodeHash())
	return exitOK
}
