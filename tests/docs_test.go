package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/herald/herald/tests/testdb"
)

// sqlBlocks returns the ```sql blocks of a Markdown file, in order.
func sqlBlocks(t *testing.T, path string) []string {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(body), -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// docs/walkthrough.md works when pasted into psql in order on a fresh install: every
// block runs (ON_ERROR_STOP), and the states it promises are the ones reached.
func TestWalkthroughRunsAsWritten(t *testing.T) {
	t.Parallel()
	blocks := sqlBlocks(t, filepath.Join(testdb.RepoRoot(), "docs", "walkthrough.md"))
	if len(blocks) < 6 {
		t.Fatalf("found %d sql blocks in docs/walkthrough.md", len(blocks))
	}
	script := strings.Join(blocks, "\n") + `
SELECT 'final ' || string_agg(kind, ',' ORDER BY "offset") FROM herald.log;
SELECT 'otp ' || status || ' ' || attempts FROM herald.status(:otp);
SELECT 'again ' || status FROM herald.status(:again);
SELECT 'ana ' || status || ' ' || outcome FROM herald.status(:ana);
SELECT 'suppressed ' || kind || ' ' || recipient || ' ' || reason FROM herald.suppressions;
SELECT 'lag ' || lag FROM herald.consumer_lag WHERE group_name = 'walkthrough';
`
	out, err := psql(t, testdb.New(t), script)
	if err != nil {
		t.Fatalf("the walkthrough failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"final accepted,accepted,accepted,sent,dead,cancelled,delivered,complained,accepted,suppressed",
		"again suppressed",
		"ana sent complained",
		"suppressed email ana@example.com complained",
		"otp queued 1",
		"lag 0",
		`{"attempts": 1, "provider_message_id": "provider-id-1"}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("walkthrough output lacks %q:\n%s", want, out)
		}
	}
}
