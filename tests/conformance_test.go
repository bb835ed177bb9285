package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald/herald/tests/testdb"
)

// The runner conformance suite (tests/conformance) passes `herald run` and the
// Python reference runner, and fails runners that break the contract — one that
// never extends leases, one that reports with tokens of its own, one that exits at
// SIGTERM without reporting, one whose webhook-ids lack the installation's tag — on
// the check each breaks. Bad arguments: usage, exit 2.
func TestConformanceSuite(t *testing.T) {
	t.Parallel()
	root := testdb.RepoRoot()
	suite := filepath.Join(t.TempDir(), "conformance")
	build := exec.Command("go", "build", "-o", suite, "./tests/conformance")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the suite: %v\n%s", err, out)
	}
	server := testdb.ServerURL(t)
	herald := buildHerald(t)
	dir := filepath.Join(root, "tests", "conformance")
	run := func(args ...string) (string, int) {
		cmd := exec.Command(suite, args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "DATABASE_URL="+server, "HERALD="+herald)
		out, err := cmd.CombinedOutput()
		code := 0
		if err != nil {
			code = -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
		}
		return string(out), code
	}
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		failed string // the check that must fail
	}{
		{"herald run", []string{"--", filepath.Join(dir, "herald-run.sh")}, 0, ""},
		{"python reference runner", []string{"--", filepath.Join(dir, "python-runner.sh")}, 0, ""},
		{"never extends leases", []string{"-only", "slow send", "--", filepath.Join(dir, "python-runner.sh"), "no-extend"}, 1, "slow send"},
		{"ignores lease tokens", []string{"-only", "drain", "--", filepath.Join(dir, "python-runner.sh"), "ignore-tokens"}, 1, "drain"},
		{"drops unsent work at SIGTERM", []string{"-only", "SIGTERM", "--", filepath.Join(dir, "python-runner.sh"), "drop-unsent"}, 1, "SIGTERM"},
		{"webhook-ids without the installation's tag", []string{"-only", "drain", "--", filepath.Join(dir, "python-runner.sh"), "bare-ids"}, 1, "drain"},
		{"a send that may have been taken not reported in doubt", []string{"-only", "failure classes", "--", filepath.Join(dir, "python-runner.sh"), "no-doubt"}, 1, "failure classes"},
		{"no command", nil, 2, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, code := run(c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d:\n%s", code, c.code, out)
			}
			if c.failed != "" && !strings.Contains(out, "FAIL  "+c.failed) {
				t.Fatalf("the %q check did not fail:\n%s", c.failed, out)
			}
			if c.code == 0 && (strings.Contains(out, "FAIL") || !strings.Contains(out, "all checks passed")) {
				t.Fatalf("not all checks passed:\n%s", out)
			}
			t.Logf("\n%s", out)
		})
	}
}
