package tests

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald/herald/tests/testdb"
)

// The container recipe's build step, run as written (docs/deploy/Dockerfile's
// `RUN CGO_ENABLED=0 go build …` line, with its output moved to a temporary folder):
// it makes a static binary — no ELF interpreter, so it runs on an empty base image —
// that starts and says its version. (Building the image itself needs a Docker daemon
// and a registry, which this machine does not have.)
func TestContainerRecipeBuildsAStaticBinary(t *testing.T) {
	t.Parallel()
	root := testdb.RepoRoot()
	recipe, err := os.ReadFile(filepath.Join(root, "docs", "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var build string
	for _, line := range strings.Split(string(recipe), "\n") {
		if strings.HasPrefix(line, "RUN CGO_ENABLED=0 go build ") {
			build = strings.TrimPrefix(line, "RUN ")
		}
	}
	if build == "" || !strings.Contains(build, "-o /out/herald") {
		t.Fatalf("no `RUN CGO_ENABLED=0 go build … -o /out/herald` line in the Dockerfile")
	}
	out := filepath.Join(t.TempDir(), "herald")
	cmd := exec.Command("sh", "-c", strings.Replace(build, "/out/herald", out, 1))
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary is dynamically linked (it has an ELF interpreter)")
		}
	}
	if b, err := exec.Command(out, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(b), "herald ") {
		t.Fatalf("herald version: %v %s", err, b)
	}
}
