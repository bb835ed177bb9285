package tests

import (
	"fmt"
	"strings"
	"testing"
)

// The e-mail rule, case by case: each clause of herald._email_address's header has
// an address that breaks only it.
func TestEmailAddressRule(t *testing.T) {
	ctx, pool := setup(t)
	label63, label64 := strings.Repeat("b", 63), strings.Repeat("b", 64)
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"ana@example.com", true},
		{"a@b", true},
		{"first.last+tag@sub.example-mail.co", true},
		{"!#$%&'*+/=?^_`{|}~-@example.com", true},
		{"a-.b@example.com", true}, // a hyphen next to a dot is fine in the local part
		{"a@" + label63 + ".com", true},
		{"a@" + label64 + ".com", false},
		{"a@x." + label63, true},
		{"a@x." + label64, false},
		{label64 + "x@example.com", true}, // the 63 limit is the domain's labels'
		{strings.Repeat("a", 64) + "@" + label63 + "." + label63 + "." + strings.Repeat("b", 60), true},
		{"a@" + strings.Repeat(label63+".", 3) + strings.Repeat("c", 60), true},  // 254 characters
		{"a@" + strings.Repeat(label63+".", 3) + strings.Repeat("c", 61), false}, // 255
		{"", false},
		{"ana.example.com", false},
		{"ana@@example.com", false},
		{"a@b@example.com", false},
		{"@example.com", false},
		{"ana@", false},
		{".ana@example.com", false},
		{"ana.@example.com", false},
		{"an..a@example.com", false},
		{"ana b@example.com", false},
		{"ana@-example.com", false},
		{"ana@example-.com", false},
		{"ana@example.-com", false},
		{"ana@example..com", false},
		{"ana@.example.com", false},
		{"ana@example.com.", false},
		{"ana@exa_mple.com", false},
		{"añа@example.com", false},
	} {
		var got bool
		if err := pool.QueryRow(ctx, `SELECT herald._email_address($1)`, c.addr).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("_email_address(%q) = %v, want %v", c.addr, got, c.want)
		}
	}
}

// The rule is one regular expression (herald._recipient_pattern); a formulation
// clause by clause, kept here as the reference, must give the same verdict on every string of up to 7
// characters over an alphabet that exercises each clause (dots, hyphens, '@', a
// character allowed only in the local part), and on long labels around 63.
func TestEmailAddressRuleMatchesReference(t *testing.T) {
	ctx, pool := setup(t)
	const reference = `(length(v) <= 254
	   AND v ~ '^[A-Za-z0-9.!#$%&''*+/=?^_` + "`" + `{|}~-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$'
	   AND left(v, 1) <> '.'
	   AND strpos(v, '..') = 0
	   AND strpos(v, '.@') = 0
	   AND strpos('.' || split_part(v, '@', 2) || '.', '.-') = 0
	   AND strpos('.' || split_part(v, '@', 2) || '.', '-.') = 0
	   AND (length(split_part(v, '@', 2)) <= 63 OR split_part(v, '@', 2) !~ '[^.]{64}'))`
	var n, differ, accepted int64
	var example *string
	err := pool.QueryRow(ctx, shortStrings(`ARRAY['a', '.', '-', '@', '_']`, 7)+`, long(v) AS (
		  SELECT l || '@' || d
		  FROM unnest(ARRAY['a', repeat('a', 70), 'a.' || repeat('a', 64)]) l,
		       LATERAL (SELECT repeat('b', k) || '.c' FROM generate_series(60, 67) k
		                UNION ALL SELECT 'c.' || repeat('b', k) FROM generate_series(60, 67) k
		                UNION ALL SELECT 'c.' || repeat('b', k) || '-' FROM generate_series(60, 67) k
		                UNION ALL SELECT repeat('b', 30) || '.' || repeat('b', k) || '.' || repeat('b', 30) FROM generate_series(60, 67) k) x(d)
		), cases AS (SELECT v, `+reference+` AS old, herald._email_address(v) AS new FROM s UNION ALL SELECT v, `+reference+`, herald._email_address(v) FROM long)
		SELECT count(*), count(*) FILTER (WHERE old IS DISTINCT FROM new),
		       min(v) FILTER (WHERE old IS DISTINCT FROM new), count(*) FILTER (WHERE new)
		FROM cases`).Scan(&n, &differ, &example, &accepted)
	if err != nil {
		t.Fatal(err)
	}
	wantSameVerdicts(t, n, differ, accepted, example, 90000, 100, "than the reference rule")
}

// shortStrings opens a recursive CTE, s(v), of every string of up to maxLen
// characters over alphabet (an SQL text array): the input of the comparisons of two
// rules over generated strings.
func shortStrings(alphabet string, maxLen int) string {
	return fmt.Sprintf(`WITH RECURSIVE s(v) AS (
		  SELECT ''::text
		  UNION ALL
		  SELECT s.v || c FROM s, unnest(%s) c WHERE length(s.v) < %d
		)`, alphabet, maxLen)
}

// wantSameVerdicts judges a comparison of two rules over generated strings: n
// strings compared (at least minN), differ of them with another verdict (none
// allowed; example is one), accepted of them addresses (at least minAccepted, or
// the comparison says little).
func wantSameVerdicts(t *testing.T, n, differ, accepted int64, example *string, minN, minAccepted int64, than string) {
	t.Helper()
	if n < minN {
		t.Fatalf("only %d strings compared", n)
	}
	if differ != 0 {
		t.Fatalf("%d of %d strings get another verdict %s, e.g. %q", differ, n, than, *example)
	}
	if accepted < minAccepted {
		t.Fatalf("only %d compared strings are addresses: the comparison says little", accepted)
	}
}

// An address with its domain in Unicode is refused (providers take domains in ASCII)
// with the ASCII form to give instead, the same IDNA A-label Python's idna codec
// makes; in a cc too. A local part outside ASCII is refused as needing SMTPUTF8.
// Nothing is stored. herald._punycode also gives RFC 3492's own samples.
func TestUnicodeAddressesNameTheirASCIIForm(t *testing.T) {
	ctx, pool := setup(t)
	for _, c := range []struct{ addr, ascii string }{
		{"ana@bücher.de", "ana@xn--bcher-kva.de"},
		{"ana@MÜNCHEN.de", "ana@xn--mnchen-3ya.de"},
		{"ivan@пример.рф", "ivan@xn--e1afmkfd.xn--p1ai"},
		{"eleni@ελληνικά.gr", "eleni@xn--hxargifdar.gr"},
		{"ken@日本語.jp", "ken@xn--wgv71a119e.jp"},
		{"sol@ñandú.com.ar", "sol@xn--and-6ma2c.com.ar"},
	} {
		_, err := pool.Exec(ctx, `SELECT herald.enqueue('email', $1, '{"subject":"s","text":"t"}')`, c.addr)
		if e := wantPgError(t, err, "22V02", "recipient"); !strings.HasSuffix(e.Message, "give it in ASCII (IDNA), "+c.ascii) {
			t.Errorf("%s: %q, want the ASCII form %s", c.addr, e.Message, c.ascii)
		}
		_, err = pool.Exec(ctx, `SELECT herald.enqueue('email', 'a@example.com', jsonb_build_object('subject', 's', 'text', 't',
			'cc', jsonb_build_array('kim@example.com', $1::text)))`, c.addr)
		if e := wantPgError(t, err, "22V03", "payload.cc"); !strings.HasSuffix(e.Message, c.ascii) {
			t.Errorf("%s as a cc: %q", c.addr, e.Message)
		}
	}
	_, err := pool.Exec(ctx, `SELECT herald.enqueue('email', 'josé@example.com', '{"subject":"s","text":"t"}')`)
	if e := wantPgError(t, err, "22V02", "recipient"); !strings.Contains(e.Message, "SMTPUTF8") {
		t.Errorf("a local part outside ASCII: %q", e.Message)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 0 {
		t.Fatalf("%d messages stored", n)
	}
	for label, want := range map[string]string{"他们为什么不说中文": "ihqwcrb4cv8a8dqg056pqjye", "3年B組金八先生": "3B-ww4c5e180e575a65lsy2b", "abc": "abc-"} {
		if got := scalar[string](t, pool, `SELECT herald._punycode($1)`, label); got != want {
			t.Errorf("punycode %s: %s, want %s", label, got, want)
		}
	}
}

// An e-mail goes to at most its channel's max_recipients addresses, its recipient,
// cc and bcc together: 50 by default, what Amazon SES, Postmark and Resend take (SES
// answered a message with more 554 "Recipient count exceeds 50" after it was stored:
// dead). More is refused at enqueue naming the field, single or in a batch, and
// nothing is stored; a channel whose provider takes more may allow up to 101 (the
// recipient and 50 of each).
func TestAnEmailGoesToAtMostMaxRecipients(t *testing.T) {
	ctx, pool := setup(t)
	payload := func(cc, bcc int) string {
		addrs := func(prefix string, n int) string {
			a := make([]string, n)
			for i := range a {
				a[i] = fmt.Sprintf(`"%s%d@example.com"`, prefix, i)
			}
			return "[" + strings.Join(a, ",") + "]"
		}
		p := `{"subject":"s","text":"t"`
		if cc > 0 {
			p += `,"cc":` + addrs("cc", cc)
		}
		if bcc > 0 {
			p += `,"bcc":` + addrs("bcc", bcc)
		}
		return p + "}"
	}
	for _, c := range []struct {
		cc, bcc int
		field   string
	}{{49, 1, "payload.bcc"}, {50, 0, "payload.cc"}, {30, 30, "payload.bcc"}} {
		_, err := pool.Exec(ctx, `SELECT herald.enqueue('email', 'ana@example.com', $1::jsonb)`, payload(c.cc, c.bcc))
		if e := wantPgError(t, err, "22V03", c.field); !strings.Contains(e.Message, fmt.Sprintf("goes to %d addresses", 1+c.cc+c.bcc)) ||
			!strings.Contains(e.Message, "over the 50 of channel 'email' (its max_recipients)") {
			t.Errorf("%d cc, %d bcc: %q", c.cc, c.bcc, e.Message)
		}
	}
	_, err := pool.Exec(ctx, `SELECT herald.enqueue_batch(jsonb_build_array(
		jsonb_build_object('channel', 'email', 'recipient', 'bo@example.com', 'payload', '{"subject":"s","text":"t"}'::jsonb),
		jsonb_build_object('channel', 'email', 'recipient', 'ana@example.com', 'payload', $1::jsonb)))`, payload(25, 25))
	wantPgError(t, err, "22V03", "messages[1].payload.bcc")
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 0 {
		t.Fatalf("%d messages stored", n)
	}
	mustExec(t, pool, `SELECT herald.enqueue('email', 'ana@example.com', $1::jsonb)`, payload(25, 24))
	mustExec(t, pool, `UPDATE herald.channels SET max_recipients = 101 WHERE name = 'email'`)
	mustExec(t, pool, `SELECT herald.enqueue('email', 'ana@example.com', $1::jsonb)`, payload(50, 50))
	if _, err := pool.Exec(ctx, `UPDATE herald.channels SET max_recipients = 102 WHERE name = 'email'`); err == nil {
		t.Fatal("max_recipients 102 taken: the recipient and 50 of each are 101")
	}
}
