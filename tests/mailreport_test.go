package tests

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald/herald/runner/sender/email"
)

// roleURL is pool's database URL for a role loginPool made.
func roleURL(t *testing.T, pool *pgxpool.Pool, role string) string {
	t.Helper()
	u, err := url.Parse(pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "herald-test")
	return u.String()
}

// postfixDSN is a bounce as Postfix writes it (RFC 3464: a readable part, the
// delivery-status part, the returned message's headers), about herald message id sent
// to `to` with a copy to cc; rcpt is the recipient it reports on.
func postfixDSN(msgID, to, rcpt, action, status, diag string) string {
	return strings.ReplaceAll(fmt.Sprintf(`Return-Path: <>
Received: by mail.example.com (Postfix) id 4F1A2; Thu, 26 Nov 2026 10:00:05 +0000 (UTC)
Date: Thu, 26 Nov 2026 10:00:05 +0000 (UTC)
From: MAILER-DAEMON@mail.example.com (Mail Delivery System)
Subject: Undelivered Mail Returned to Sender
To: bounces@example.com
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status;
	boundary="4F1A2.1764151205/mail.example.com"
Message-Id: <20261126100005.4F1A2-%[3]s-%[4]s@mail.example.com>

This is a MIME-encapsulated message.

--4F1A2.1764151205/mail.example.com
Content-Description: Notification
Content-Type: text/plain; charset=us-ascii

This is the mail system at host mail.example.com.

I'm sorry to have to inform you that your message could not
be delivered to one or more recipients.

--4F1A2.1764151205/mail.example.com
Content-Description: Delivery report
Content-Type: message/delivery-status

Reporting-MTA: dns; mail.example.com
X-Postfix-Queue-ID: 4F1A2
X-Postfix-Sender: rfc822; bounces@example.com
Arrival-Date: Thu, 26 Nov 2026 10:00:01 +0000 (UTC)

Final-Recipient: rfc822; %[3]s
Original-Recipient: rfc822;%[3]s
Action: %[4]s
Status: %[5]s
Remote-MTA: dns; mx.example.net
Diagnostic-Code: smtp; %[6]s

--4F1A2.1764151205/mail.example.com
Content-Description: Undelivered Message Headers
Content-Type: text/rfc822-headers

Return-Path: <bounces@example.com>
From: Herald <noreply@example.com>
To: %[2]s
Cc: copy@example.net
Subject: Your receipt
Message-ID: %[1]s
MIME-Version: 1.0

--4F1A2.1764151205/mail.example.com--
`, msgID, to, rcpt, action, status, diag), "\n", "\r\n")
}

// exchangeDSN is a bounce in Microsoft Exchange's shape: the delivery-status part
// quoted-printable and the whole original message returned.
func exchangeDSN(msgID, to string) string {
	return strings.ReplaceAll(fmt.Sprintf(`From: postmaster@outlook.example
To: bounces@example.com
Subject: Undeliverable: Your receipt
Message-ID: <exch-%[2]s@outlook.example>
Content-Type: multipart/report; report-type=delivery-status; boundary="_000_exch_"
MIME-Version: 1.0

--_000_exch_
Content-Type: text/plain; charset="us-ascii"

Delivery has failed to these recipients or groups:

--_000_exch_
Content-Type: message/delivery-status
Content-Transfer-Encoding: quoted-printable

Reporting-MTA: dns;outlook.example
Received-From-MTA: dns;mail.example.com

Original-Recipient: rfc822;%[2]s
Final-Recipient: rfc822;%[2]s
Action: failed
Status: 5.2.2
Diagnostic-Code: smtp;552 5.2.2 Mailbox full; STOREDRV.Deliver.Exception:Quota=
ExceededException

--_000_exch_
Content-Type: message/rfc822

From: Herald <noreply@example.com>
To: <%[2]s>
Subject: Your receipt
Message-ID: %[1]s

Thanks.

--_000_exch_--
`, msgID, to), "\n", "\r\n")
}

// mailReport runs `herald mail-report` (bin) with input on stdin and env added, as a
// mail server's pipe does; returns its exit code and output.
func mailReport(t *testing.T, bin, input string, env ...string) (int, string) {
	t.Helper()
	return runCommand(t, bin, []string{"mail-report"}, input, env...)
}

// runCommand runs bin with args, input on stdin and env added to the environment, and
// returns its exit code and its output (standard output and error together).
func runCommand(t *testing.T, bin string, args []string, input string, env ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// arfReport is a feedback loop's complaint (RFC 5965), as Yahoo's and Microsoft's
// send them: the feedback-report part (Feedback-Type feedbackType; Original-Rcpt-To
// rcpt unless empty) and the returned message's headers, with herald message id's
// Message-ID and its To (to, as the provider left it: often redacted).
func arfReport(msgID, feedbackType, rcpt, to string) string {
	rcptField := ""
	if rcpt != "" {
		rcptField = "Original-Rcpt-To: " + rcpt + "\n"
	}
	return strings.ReplaceAll(fmt.Sprintf(`From: staff@fbl.mail.example
Date: Thu, 26 Nov 2026 11:00:00 +0000
Subject: FW: Your receipt
To: fbl@example.com
Message-ID: <fbl-%[2]s-%[5]s@fbl.mail.example>
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report;
	boundary="----=_Part_fbl"

------=_Part_fbl
Content-Type: text/plain; charset="US-ASCII"

This is an email abuse report for an email message received from IP 203.0.113.7.

------=_Part_fbl
Content-Type: message/feedback-report

Feedback-Type: %[2]s
User-Agent: ExampleFBL/1.0
Version: 1
Original-Mail-From: <bounces@example.com>
%[3]sArrival-Date: Thu, 26 Nov 2026 10:00:01 +0000
Reported-Domain: example.com
Source-IP: 203.0.113.7

------=_Part_fbl
Content-Type: text/rfc822-headers

From: Herald <noreply@example.com>
To: %[4]s
Subject: Your receipt
Message-ID: %[1]s

------=_Part_fbl--
`, msgID, feedbackType, rcptField, to, strings.Trim(msgID, "<>")), "\n", "\r\n")
}

// Complaints from feedback loops (RFC 5965 reports piped to herald mail-report): an
// abuse report on a message herald signed records 'complained' for its recipient (the
// Original-Rcpt-To when given, else the message's, since loops redact it) and
// suppresses the address, once however often it is delivered; a copy's complaint
// suppresses the copy only. A not-spam or auth-failure report records nothing; so
// does one on a Message-ID without herald's tag (anyone can mail a report).
func TestComplaintsFromAFeedbackLoop(t *testing.T) {
	_, pool := setup(t)
	bin := buildHerald(t)
	env := []string{"DATABASE_URL=" + pool.Config().ConnString()}
	ids := smtpSent(t, pool, "ana@example.net", "bo@example.net", "cy@example.net")
	msgID := func(i int) string { return heraldMessageID(t, pool, ids[i]) }
	for name, input := range map[string]string{
		"not spam":        arfReport(msgID(0), "not-spam", "", "ana@example.net"),
		"an auth failure": arfReport(msgID(0), "auth-failure", "", "ana@example.net"),
		"a forged report": arfReport(fmt.Sprintf("<herald-%d@example.com>", ids[0]), "abuse", "", "ana@example.net"),
	} {
		if code, out := mailReport(t, bin, input, env...); code != 0 || !strings.Contains(out, "no event") {
			t.Errorf("%s: exit %d %s", name, code, out)
		}
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.delivery_events`); n != 0 {
		t.Fatalf("%d events stored from reports that are no complaint of ours", n)
	}
	redacted := arfReport(msgID(0), "abuse", "xxxxxxxx@example.net", "redacted@example.net")
	for i := 0; i < 2; i++ { // a mail server may deliver the same report twice
		if code, out := mailReport(t, bin, redacted, env...); code != 0 || !strings.Contains(out, fmt.Sprintf("arf: recorded %d, duplicates %d", 1-i, i)) {
			t.Fatalf("a redacted complaint, delivery %d: exit %d %s", i+1, code, out)
		}
	}
	if code, out := mailReport(t, bin, arfReport(msgID(1), "abuse", "<bo@example.net>", "bo@example.net"), env...); code != 0 || !strings.Contains(out, "recorded 1") {
		t.Fatalf("a complaint naming its recipient: exit %d %s", code, out)
	}
	if code, out := mailReport(t, bin, arfReport(msgID(2), "abuse", "copy@example.net", "cy@example.net"), env...); code != 0 || !strings.Contains(out, "recorded 1") {
		t.Fatalf("a copy's complaint: exit %d %s", code, out)
	}
	got := []string{outcome(t, pool, ids[0]), outcome(t, pool, ids[1]), outcome(t, pool, ids[2])}
	if want := []string{"sent complained - -", "sent complained - -", "sent - - -"}; strings.Join(got, " / ") != strings.Join(want, " / ") {
		t.Fatalf("outcomes %q, want %q", got, want)
	}
	if sup := scalar[string](t, pool, `SELECT string_agg(recipient || ':' || reason || ':' || source, ' ' ORDER BY recipient) FROM herald.suppressions`); sup != "ana@example.net:complained:arf bo@example.net:complained:arf copy@example.net:complained:arf" {
		t.Fatalf("suppressions: %q", sup)
	}
}

// herald mail-report, as a mail server's pipe runs it: a bounce on stdin is recorded for the
// To recipient of the herald message whose signed Message-ID it returns (Postfix's
// and Exchange's shapes): a failure is undelivered with the receiving server's reply
// and status as its code, and an unknown mailbox (550 5.1.1) suppresses the address
// where a full one (552 5.2.2) does not; a delay defers. Once however often the server
// delivers it. Anyone can mail a bounce: one naming a message id without the tag of
// a key of herald.message_id_keys, or with a wrong one, records nothing (else a
// stranger could suppress any recipient whose message id it guesses), nor does an
// auto-reply (exit 0); a key rotated out still verifies while its row is kept. A
// copy's bounce suppresses the copy and leaves the message's outcome alone, one about
// an address the message never went to is unknown; unreadable input is 65; an
// unreachable database or a role that may not read the keys and record is 75 (the
// server keeps the bounce) and stores nothing.
func TestDSNFromAMailServer(t *testing.T) {
	_, pool := setup(t)
	bin := buildHerald(t)
	ids := smtpSent(t, pool, "ana@example.net", "bo@example.net", "cy@example.net", "dee@example.net", "eve@example.net", "fay@example.net")
	key := messageIDKey(t, pool)
	msgID := func(i int) string { return email.MessageID(ids[i], key, "example.com") }
	mustExec(t, pool, `INSERT INTO herald.message_id_keys (created_at) VALUES (now() + interval '1 second')`) // rotated after sending
	dsn := func(input, dbURL string) (int, string) {
		t.Helper()
		return mailReport(t, bin, input, "DATABASE_URL="+dbURL)
	}
	hard := postfixDSN(msgID(0), "Ana Lima <ana@example.net>", "ana@example.net", "failed", "5.1.1",
		"550 5.1.1 <ana@example.net>: Recipient address rejected: User unknown in virtual mailbox table")
	stored := func() int64 { return scalar[int64](t, pool, `SELECT count(*) FROM herald.delivery_events`) }

	// Nothing recorded and the bounce kept: no database, or a role that may not read
	// the Message-ID keys and record.
	if code, out := dsn(hard, "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"); code != 75 {
		t.Fatalf("no database: exit %d %s", code, out)
	}
	loginPool(t, pool, "dsn_outsider", "herald_producer")
	if code, out := dsn(hard, roleURL(t, pool, "dsn_outsider")); code != 75 || stored() != 0 {
		t.Fatalf("a role without herald_events: exit %d %s (%d stored)", code, out, stored())
	}
	loginPool(t, pool, "dsn_pipe", "herald_events")
	events := roleURL(t, pool, "dsn_pipe")
	for name, c := range map[string]struct {
		input string
		code  int
	}{
		"unreadable":          {"\x00\x01 not a mail", 65},
		"an auto-reply":       {"From: bo@example.net\r\nTo: noreply@example.com\r\nSubject: Out of office\r\nAuto-Submitted: auto-replied\r\n\r\nBack Monday.\r\n", 0},
		"a stranger's bounce": {strings.Replace(hard, "<herald-", "<not-herald-", 1), 0},
		"a forged bounce, no tag": {postfixDSN(fmt.Sprintf("<herald-%d@example.com>", ids[0]), "ana@example.net", "ana@example.net",
			"failed", "5.1.1", "550 5.1.1 unknown"), 0},
		"a forged bounce, a wrong tag": {postfixDSN(email.MessageID(ids[0], []byte("another key"), "example.com"), "ana@example.net",
			"ana@example.net", "failed", "5.1.1", "550 5.1.1 unknown"), 0},
	} {
		if code, out := dsn(c.input, events); code != c.code {
			t.Errorf("%s: exit %d, want %d: %s", name, code, c.code, out)
		}
	}
	if n := stored(); n != 0 {
		t.Fatalf("%d events stored from reports about nothing of ours", n)
	}

	for i := 0; i < 2; i++ { // a mail server may deliver the same bounce twice
		if code, out := dsn(hard, events); code != 0 || !strings.Contains(out, fmt.Sprintf("recorded %d, duplicates %d", 1-i, i)) {
			t.Fatalf("hard bounce, delivery %d: exit %d %s", i+1, code, out)
		}
	}
	delayed := postfixDSN(msgID(1), "bo@example.net", "bo@example.net", "delayed", "4.4.1", "connect to mx.example.net: Connection timed out")
	if code, out := dsn(delayed, events); code != 0 || !strings.Contains(out, "recorded 1") {
		t.Fatalf("delay: exit %d %s", code, out)
	}
	if code, out := dsn(exchangeDSN(msgID(3), "dee@example.net"), events); code != 0 || !strings.Contains(out, "recorded 1") {
		t.Fatalf("Exchange's bounce: exit %d %s", code, out)
	}
	copyBounce := postfixDSN(msgID(2), "cy@example.net", "copy@example.net", "failed", "5.1.1", "550 5.1.1 unknown")
	if code, out := dsn(copyBounce, events); code != 0 || !strings.Contains(out, "recorded 1, duplicates 0, unknown 0") {
		t.Fatalf("a copy's bounce: exit %d %s", code, out)
	}
	stranger := postfixDSN(msgID(2), "cy@example.net", "stranger@example.org", "failed", "5.1.1", "550 5.1.1 unknown")
	if code, out := dsn(stranger, events); code != 0 || !strings.Contains(out, "recorded 0, duplicates 0, unknown 1") {
		t.Fatalf("a bounce of an address the message never went to: exit %d %s", code, out)
	}
	// A local delivery's bounce has no SMTP reply: the bare status still rules the
	// mailbox out.
	local := strings.Replace(postfixDSN(msgID(4), "eve@example.net", "eve@example.net", "failed", "5.1.1", ""),
		"Diagnostic-Code: smtp; ", "Diagnostic-Code: X-Postfix; unknown user: \"eve\"", 1)
	if code, out := dsn(local, events); code != 0 || !strings.Contains(out, "recorded 1") {
		t.Fatalf("a local bounce: exit %d %s", code, out)
	}
	// A report of delivery (asked for with HERALD_SMTP_DSN=success,…), which returns no
	// headers: the envelope id (ENVID, xtext) names the message; delivered. A forged
	// one (another key's tag) names nothing.
	noHeaders := func(envid string) string {
		r := postfixDSN(msgID(5), "fay@example.net", "fay@example.net", "delivered", "2.0.0", "250 2.0.0 Ok: queued as 4Xq2")
		r = strings.Replace(r, "X-Postfix-Queue-ID: 4F1A2\r\n", "X-Postfix-Queue-ID: 4F1A2\r\nOriginal-Envelope-Id: "+envid+"\r\n", 1)
		return strings.Replace(r, "Message-ID: "+msgID(5)+"\r\n", "", 1)
	}
	forged := strings.Trim(email.MessageID(ids[5], []byte("another key"), "example.com"), "<>")
	if code, out := dsn(noHeaders(forged), events); code != 0 || !strings.Contains(out, "no event about a message herald signed") {
		t.Fatalf("a forged envelope id: exit %d %s", code, out)
	}
	envid := strings.Replace(strings.Trim(msgID(5), "<>"), ".", "+2E", 1)
	if code, out := dsn(noHeaders(envid), events); code != 0 || !strings.Contains(out, "recorded 1") {
		t.Fatalf("a report of delivery by envelope id: exit %d %s", code, out)
	}
	got := []string{outcome(t, pool, ids[0]), outcome(t, pool, ids[1]), outcome(t, pool, ids[2]), outcome(t, pool, ids[3]), outcome(t, pool, ids[4]),
		outcome(t, pool, ids[5])}
	want := []string{"sent undelivered - 550 5.1.1", "sent deferred - 4.4.1", "sent - - -", "sent undelivered - 552 5.2.2", "sent undelivered - 5.1.1",
		"sent delivered - 250 2.0.0"}
	if strings.Join(got, " / ") != strings.Join(want, " / ") {
		t.Fatalf("outcomes %q, want %q", got, want)
	}
	if sup := scalar[string](t, pool, `SELECT string_agg(recipient || ':' || reason || ':' || source, ' ' ORDER BY recipient) FROM herald.suppressions`); sup != "ana@example.net:bounced:dsn copy@example.net:bounced:dsn eve@example.net:bounced:dsn" {
		t.Fatalf("suppressions: %q (a full mailbox and a delay suppress nothing)", sup)
	}
}
