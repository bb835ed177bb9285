package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/net/publicsuffix"

	"github.com/herald/herald/tests/testdb"
)

// publicSuffixesFile is the migration holding the Public Suffix List herald's SQL
// reads (herald.public_suffixes), written from the runner's own copy.
const publicSuffixesFile = "sql/schema/004_public_suffixes.sql"

// suffixRule is what the Public Suffix List says of one name: a suffix itself
// (normal), every name one label under it (wildcard, "*.name"), or not a suffix
// although a wildcard above covers it (exception, "!name").
type suffixRule struct{ normal, wildcard, exception bool }

// runnersSuffixes decodes the Public Suffix List compiled into golang.org/x/net/publicsuffix,
// the copy `herald run` groups webhook receivers by (HERALD_WEBHOOK_HOST_CONCURRENCY),
// from the tables its generator wrote (data/text, nodes, children; the layout in its
// table.go), so that SQL counts sites with exactly the same list.
func runnersSuffixes(t *testing.T) map[string]suffixRule {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/net")
	cmd.Dir = testdb.RepoRoot()
	dir, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list golang.org/x/net: %v", err)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "publicsuffix", "data", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	text, nodes, children := read("text"), read("nodes"), read("children")
	node := func(i uint32) uint64 { // 40 bits: children index (10), ICANN (1), text offset (16), text length (6)
		b := nodes[5*i:]
		return uint64(b[0])<<32 | uint64(b[1])<<24 | uint64(b[2])<<16 | uint64(b[3])<<8 | uint64(b[4])
	}
	child := func(i uint32) uint32 { // wildcard (1), node type (2), high (14), low (14)
		b := children[4*i:]
		return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	}
	rules := map[string]suffixRule{}
	var walk func(lo, hi uint32, parent string)
	walk = func(lo, hi uint32, parent string) {
		for i := lo; i < hi; i++ {
			n := node(i)
			off, length := uint32(n>>6)&(1<<16-1), uint32(n)&(1<<6-1)
			name := string(text[off : off+length])
			if parent != "" {
				name += "." + parent
			}
			c := child(uint32(n>>23) & (1<<10 - 1))
			typ, wildcard := c>>28&3, c>>30&1 == 1
			if r := (suffixRule{normal: typ == 0, exception: typ == 1, wildcard: wildcard}); r != (suffixRule{}) {
				rules[name] = r
			}
			walk(c&(1<<14-1), c>>14&(1<<14-1), name)
		}
	}
	walk(0, numTLDs(t, strings.TrimSpace(string(dir))), "")
	if len(rules) < 5000 || !rules["co.uk"].normal || !rules["ck"].wildcard || !rules["www.ck"].exception {
		t.Fatalf("the decoded list is not the Public Suffix List (%d rules)", len(rules))
	}
	return rules
}

// numTLDs reads numTLD, the count of top-level nodes, from x/net's table.go.
func numTLDs(t *testing.T, dir string) uint32 {
	b, err := os.ReadFile(filepath.Join(dir, "publicsuffix", "table.go"))
	if err != nil {
		t.Fatal(err)
	}
	var n uint32
	for _, line := range strings.Split(string(b), "\n") {
		if _, err := fmt.Sscanf(line, "const numTLD = %d", &n); err == nil {
			return n
		}
	}
	t.Fatal("x/net's table.go has no numTLD")
	return 0
}

// herald.public_suffixes holds the runner's Public Suffix List, rule for rule, and
// herald._site gives every host the site x/net's EffectiveTLDPlusOne gives (the host
// itself where it is a public suffix or has no site): probed at, one and two labels
// under every rule, and at hosts no rule covers. HERALD_UPDATE_PUBLIC_SUFFIXES=1
// rewrites the migration from the runner's list (after golang.org/x/net is upgraded).
func TestPublicSuffixesAreTheRunners(t *testing.T) {
	ctx, pool := setup(t)
	rules := runnersSuffixes(t)
	names := make([]string, 0, len(rules))
	for name := range rules {
		names = append(names, name)
	}
	sort.Strings(names)
	if os.Getenv("HERALD_UPDATE_PUBLIC_SUFFIXES") != "" {
		writePublicSuffixes(t, names, rules)
	}
	rows, err := pool.Query(ctx, `SELECT suffix, normal, wildcard, exception FROM herald.public_suffixes`)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]suffixRule{}
	for rows.Next() {
		var name string
		var r suffixRule
		if err := rows.Scan(&name, &r.normal, &r.wildcard, &r.exception); err != nil {
			t.Fatal(err)
		}
		stored[name] = r
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for _, name := range names {
		if stored[name] != rules[name] {
			t.Fatalf("%s: herald.public_suffixes has %+v, the runner's list %+v (HERALD_UPDATE_PUBLIC_SUFFIXES=1 go test ./tests -run TestPublicSuffixesAreTheRunners rewrites %s)",
				name, stored[name], rules[name], publicSuffixesFile)
		}
	}
	if len(stored) != len(rules) {
		t.Fatalf("herald.public_suffixes has %d rules, the runner's list %d", len(stored), len(rules))
	}
	hosts := []string{"localhost", "example", "example.com", "a.b.example.com", "foo.cromulent", "a.foo.cromulent", "192.0.2.1", "[2001:db8::1]"}
	for _, name := range names {
		hosts = append(hosts, name, "x."+name, "y.x."+name)
	}
	var sites []string
	if err := pool.QueryRow(ctx, `SELECT array_agg(herald._site(h) ORDER BY o) FROM unnest($1::text[]) WITH ORDINALITY AS u (h, o)`, hosts).Scan(&sites); err != nil {
		t.Fatal(err)
	}
	for i, h := range hosts {
		want, err := publicsuffix.EffectiveTLDPlusOne(strings.Trim(h, "[]"))
		if err != nil || strings.HasPrefix(h, "[") {
			want = h
		}
		if sites[i] != want {
			t.Errorf("herald._site(%q) = %q, the runner's site %q", h, sites[i], want)
		}
	}
}

// writePublicSuffixes writes the migration holding rules, one per line in the list's
// own syntax ("co.uk", "*.ck", "!www.ck").
func writePublicSuffixes(t *testing.T, names []string, rules map[string]suffixRule) {
	var lines []string
	for _, name := range names {
		r := rules[name]
		if r.normal {
			lines = append(lines, name)
		}
		if r.wildcard {
			lines = append(lines, "*."+name)
		}
		if r.exception {
			lines = append(lines, "!"+name)
		}
	}
	body := strings.Replace(publicSuffixesMigration, "RULES", strings.Join(lines, "\n"), 1)
	if err := os.WriteFile(filepath.Join(testdb.RepoRoot(), publicSuffixesFile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// publicSuffixesMigration is sql/schema/004_public_suffixes.sql with RULES for the list.
const publicSuffixesMigration = `-- 004_public_suffixes.sql — the Public Suffix List (publicsuffix.org, Mozilla Public
-- License 2.0), as the runner's golang.org/x/net/publicsuffix compiles it in: the
-- names under which anyone may register a domain (com, co.uk, github.io,
-- herokuapp.com). herald._site makes a webhook receiver's site from it (a host's
-- registrable domain: one label more than its longest public suffix), which
-- channels.range_limit counts; the runner groups sends in flight by the same site.
-- Written by HERALD_UPDATE_PUBLIC_SUFFIXES=1 go test ./tests -run
-- TestPublicSuffixesAreTheRunners, which checks it against the runner's list; a new
-- list after a release comes as a new migration.

CREATE TABLE herald.public_suffixes (
  suffix    text PRIMARY KEY,
  normal    boolean NOT NULL,
  wildcard  boolean NOT NULL,
  exception boolean NOT NULL,
  CONSTRAINT public_suffixes_rule CHECK (normal OR wildcard OR exception)
);
COMMENT ON TABLE herald.public_suffixes IS
  'The Public Suffix List, one row per name: herald._site finds a host''s registrable domain in it.';
COMMENT ON COLUMN herald.public_suffixes.normal IS 'The name is a public suffix (co.uk).';
COMMENT ON COLUMN herald.public_suffixes.wildcard IS 'Every name one label under it is a public suffix (*.ck).';
COMMENT ON COLUMN herald.public_suffixes.exception IS 'The name is not a public suffix though a wildcard covers it (!www.ck).';

INSERT INTO herald.public_suffixes (suffix, normal, wildcard, exception)
SELECT ltrim(rule, '*.!'), bool_or(rule !~ '^[*!]'), bool_or(rule ^@ '*.'), bool_or(rule ^@ '!')
FROM regexp_split_to_table($rules$
RULES
$rules$, '\n') AS rule
WHERE rule <> ''
GROUP BY 1;
ANALYZE herald.public_suffixes;

GRANT ALL ON herald.public_suffixes TO herald_admin;
`
