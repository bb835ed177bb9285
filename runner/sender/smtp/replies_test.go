package smtp

import (
	"fmt"
	"testing"
)

// go-mail joins the refused recipients' replies with ", ": each is split off whole,
// quoted or not, and a list that does not split into one reply per address (a text
// that itself holds ", 550 ") gives nil, so no copy is charged with another's reply.
func TestSplitReplies(t *testing.T) {
	for _, c := range []struct {
		list string
		n    int
		want string
	}{
		{`550 "5.1.1 no such user", 452 "4.2.2 mailbox full, try later"`, 2, `[550 5.1.1 no such user 452 4.2.2 mailbox full, try later]`},
		{`550 5.1.1 <a@example.net>: Recipient address rejected: User unknown, 452 4.2.2 Mailbox full`, 2,
			`[550 5.1.1 <a@example.net>: Recipient address rejected: User unknown 452 4.2.2 Mailbox full]`},
		{`550-5.1.1 first line`, 1, `[550 5.1.1 first line]`},
		{`550 5.1.1 unknown, 550 lookalike, 452 4.2.2 full`, 2, `[]`},
		{`550 5.1.1 unknown`, 2, `[]`},
		{`oops`, 1, `[]`},
	} {
		var got []string
		for _, r := range splitReplies(c.list, c.n) {
			got = append(got, fmt.Sprintf("%d %s", r.Code, r.Msg))
		}
		if fmt.Sprint(got) != c.want {
			t.Errorf("%q: %v, want %s", c.list, got, c.want)
		}
	}
}
