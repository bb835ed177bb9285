package tests

import (
	"strings"
	"testing"
)

// The SQL helpers that hot statements call are written to be inlined by the planner
// (one SQL expression, declared no less volatile than their body): called from a
// statement they must leave no call of themselves in its plan. A helper that stops
// inlining costs a separate SQL-function execution per row (release 2's
// _event_detail, declared IMMUTABLE around a STABLE jsonb_build_object, ran 200,000
// times in a 200,000-message drain). The arguments depend on the row, so nothing is
// folded to a constant before inlining is decided.
func TestHelpersAreInlined(t *testing.T) {
	ctx, pool := setup(t)
	for _, call := range []string{
		`herald._event_detail(CASE WHEN g > 0 THEN 'sent' END, g::text, NULL, NULL, g)`,
		`herald._key_hash(g::text, g::text)`,
		`herald._email_address(g::text)`,
		`herald._email_address(g::text, g > 1)`,
		`herald._recipient_pattern(g::text)`,
		`herald._recipient_list_kind(g::text, g)`,
		`herald._nonempty_string(jsonb_build_object('k', g), g::text)`,
		`herald._valid('email', 100, g::text, to_jsonb(g), NULL, g, NULL, NULL, NULL, NULL, now())`,
		`herald._valid('email', 100, g::text, to_jsonb(g), NULL, g, NULL, NULL, NULL, NULL, now(), g::text)`,
		`herald._notify_due(g::text)`,
		`herald._notify_clock_due(g)`,
	} {
		rows, err := pool.Query(ctx, `EXPLAIN (VERBOSE, COSTS OFF) SELECT `+call+` FROM generate_series(1, 2) g`)
		if err != nil {
			t.Fatalf("%s: %v", call, err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		name := call[:strings.Index(call, "(")]
		if p := strings.Join(plan, "\n"); strings.Contains(p, name+"(") {
			t.Errorf("%s is not inlined:\n%s", name, p)
		}
	}
}
