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
SELECT 'callback ' || status || ' ' || (payload->>'event') || ' ' || (payload->>'idempotency_key')
FROM herald.messages WHERE producer = 'herald:callbacks';
SELECT 'code ' || channel || ' ' || status FROM herald.status(:code);
SELECT 'sms ' || paused FROM herald.channels WHERE name = 'sms';
`
	out, err := psql(t, testdb.New(t), script)
	if err != nil {
		t.Fatalf("the walkthrough failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"final accepted,accepted,accepted,sent,dead,cancelled,delivered,complained,accepted,suppressed,accepted,sent,accepted,accepted,rerouted\n",
		"again suppressed",
		"ana sent complained",
		"suppressed email ana@example.com complained",
		"otp queued 1",
		"lag 5", // after the group's last read: Cy's accepted and sent, the callback's accepted, the code's accepted and rerouted
		"callback queued sent order-77",
		"code sms_backup processing",
		"sms false",
		`{"attempts": 1, "provider_message_id": "provider-id-1"}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("walkthrough output lacks %q:\n%s", want, out)
		}
	}
}

// Every relative link of the Markdown docs reaches a file of the repository, and a
// link to a heading (#…) reaches a heading of that file, as GitHub names them (lower
// case, punctuation dropped, spaces as hyphens): a renamed heading or a moved page
// fails here, not in a reader's browser.
func TestDocsLinksResolve(t *testing.T) {
	root := testdb.RepoRoot()
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"), filepath.Join(root, "bench", "README.md"),
		filepath.Join(root, "sql", "schema", "README.md"))
	heading := regexp.MustCompile(`(?m)^#+ (.*)$`)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	slug := func(h string) string {
		h = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`).ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), "")
		return strings.ReplaceAll(h, " ", "-")
	}
	anchors := map[string]map[string]bool{}
	read := func(path string) string {
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(body)
	}
	for _, p := range pages {
		anchors[p] = map[string]bool{}
		for _, m := range heading.FindAllStringSubmatch(read(p), -1) {
			anchors[p][slug(m[1])] = true
		}
	}
	checked := 0
	for _, p := range pages {
		for _, m := range link.FindAllStringSubmatch(read(p), -1) {
			target, frag, _ := strings.Cut(m[1], "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path := p
			if target != "" {
				path = filepath.Join(filepath.Dir(p), target)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist", p[len(root)+1:], m[1])
				continue
			}
			if frag != "" && anchors[path] != nil && !anchors[path][frag] {
				t.Errorf("%s links to %s, a heading %s does not have", p[len(root)+1:], m[1], target)
			}
			checked++
		}
	}
	if checked < 50 {
		t.Fatalf("only %d links checked: the link pattern is wrong", checked)
	}
}
