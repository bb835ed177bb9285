package tests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/herald/herald/tests/testdb"
)

const consoleToken = "console-token-0123456789"

// browser starts Debian's headless Chromium (chromedp) for the test and returns its
// context, bounded to a minute, and the function that closes it (at the latest when
// the test ends).
func browser(t *testing.T) (context.Context, func()) {
	t.Helper()
	chromium := "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Fatal("chromium is not installed (make test installs Debian's chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium),
		chromedp.NoSandbox, chromedp.Headless, chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	closeAll := func() { cancel(); cancelBrowser(); cancelAlloc() }
	t.Cleanup(closeAll)
	return ctx, closeAll
}

// The operator console in a real headless browser (Debian's chromium, driven by
// chromedp): the token form lets the operator in, the overview shows a dead letter
// with its failure, Redrive queues it again, and the message page shows it queued;
// Resume, Pause and End suspension flip the channels and the producer. Without the
// token the pages and the actions are refused and nothing changes.
func TestConsoleInABrowser(t *testing.T) {
	t.Parallel()
	ctx, closeBrowser := browser(t)
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	// The producer has status callbacks, and its callback channel is opened to another
	// producer after the setting: the dead message's callback is set aside.
	callbacksTo(t, pool, "current_user", "https://shop.example.com/herald")
	id := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"s","text":"t"}')`)
	mustExec(t, pool, `SELECT herald.fail(id, lease_token, '550 5.1.1 no such user', 'permanent', error_code => '550')
		FROM herald.claim_batch('w', 1)`)
	mustExec(t, pool, `UPDATE herald.channels SET producers = '{herald:callbacks,billing}' WHERE name = 'callbacks'`)
	mustExec(t, pool, `SELECT herald.dispatch_callbacks()`)

	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('sms_backup', 'sms')`)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, quiet_days) -- quiet all of today, until midnight UTC
		VALUES ('promo', 'sms', ARRAY[extract(isodow FROM now() AT TIME ZONE 'UTC')]::smallint[])`)
	midnight := scalar[time.Time](t, pool, `SELECT date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '1 day'`)
	mustExec(t, pool, `UPDATE herald.channels SET paused = true, paused_reason = 'SMTP 535: authentication failed', paused_at = now(),
		paused_by = 'runner', fallback = 'sms_backup' WHERE name = 'sms'`)
	mustExec(t, pool, `INSERT INTO herald.producers (producer, min_priority, max_pending, send_limit, max_bounce_rate, suspended_until, suspended_reason, concurrency)
		VALUES ('bulk', 50, 5000, 20000, 0.05, '2100-01-02 03:04:05+00', '30 of 200 messages in the last 01:00:00 bounced, over max_bounce_rate 0.05', 8)`)
	mustExec(t, pool, `UPDATE herald.channels SET producer_concurrency = 64 WHERE name = 'email'`)
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, priority, max_attempts, created_at, expires_at)
		SELECT 'bulk', 'email', 'u' || g || '@example.com', '{"subject":"s","text":"t"}', now(), 50, 5, now(), now() + interval '1 day'
		FROM generate_series(1, 7) g`)
	addr := freeAddr(t)
	serve, logs := runnerProcessArgs(t, dbURL, []string{"serve"}, "HERALD_HTTP_ADDR="+addr,
		"HERALD_INTAKE_TOKENS=svc:tok-console", "HERALD_CONSOLE_TOKEN="+consoleToken)
	waitHTTP(t, addr)
	base := "http://" + addr + "/console/"

	// Attacks without the token: nothing shown, nothing done.
	resp, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("console without a token: %d", resp.StatusCode)
	}
	for path, form := range map[string]url.Values{
		"redrive": {"id": {fmt.Sprint(id)}}, "cancel": {"id": {fmt.Sprint(id)}},
		"pause": {"channel": {"email"}, "reason": {"x"}}, "resume": {"channel": {"sms"}}, "end-suspension": {"producer": {"bulk"}},
		"redispatch": {},
	} {
		resp, err := http.PostForm(base+path, form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("%s without a token: %d", path, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest("GET", fmt.Sprintf("%smessages/%d", base, id), nil)
	req.AddCookie(&http.Cookie{Name: "herald_console", Value: "tok-console"}) // the intake's token is not the console's
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("message page with another token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if s := scalar[string](t, pool, `SELECT status || ' ' || (SELECT string_agg(name || '=' || paused, ',' ORDER BY name) FROM herald.channels)
		|| ' ' || (SELECT suspended_until > now() FROM herald.producers WHERE producer = 'bulk') FROM herald.messages WHERE id = $1`, id); s != "dead callbacks=false,email=false,promo=false,sms=true,sms_backup=false true" {
		t.Fatalf("after refused actions: %s", s)
	}

	deadID, redriveID := chromedp.ID(fmt.Sprintf("dead-%d", id)), chromedp.ID(fmt.Sprintf("redrive-%d", id))
	step := func(what string, err error) {
		if err != nil {
			t.Fatalf("browser, %s: %v\n%s", what, err, logs.String())
		}
	}
	step("sign in", chromedp.Do(ctx,
		chromedp.Navigate(base),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), consoleToken),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(deadID)))
	deadRow, err := chromedp.Run(ctx, chromedp.Text(deadID))
	step("read the dead letter", err)
	paused, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("paused")))
	step("read the paused channels", err)
	producers, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("producers")))
	step("read who fills the queue", err)
	quiet, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("quiet")))
	step("read the quiet channels", err)
	if want := "promo " + midnight.Local().Format("2006-01-02 15:04:05"); !strings.Contains(strings.Join(strings.Fields(quiet), " "), want) {
		t.Fatalf("quiet channels: %q, want %q", quiet, want)
	}
	if !regexp.MustCompile(`bulk\s+email\s+7\s+0\s+0\s+8\s+50\s+5000\s+20000 / 1 day\s+2100-01-02 \d\d:04:05: 30 of 200 messages`).MatchString(producers) {
		t.Fatalf("producers table: %q", producers)
	}
	if !regexp.MustCompile(`sms\s+SMTP 535: authentication failed\s+\S+ \S+\s+when resumed\s+sms_backup`).MatchString(paused) {
		t.Fatalf("paused channels: %q", paused)
	}
	step("redrive", chromedp.Do(ctx, chromedp.Click(redriveID), chromedp.WaitVisible(chromedp.ID("done"))))
	done, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("done")))
	step("read the result", err)
	// A copy's bounce, which the log does not carry, shows on the message's page.
	mustExec(t, pool, `INSERT INTO herald.delivery_events (source, event_id, message_id, recipient, event, type, code, reason, at, received_at)
		VALUES ('sendgrid', 'e-copy', $1, 'kim@example.com', 'bounced', 'hard', '5.1.1', '550 5.1.1 unknown user', now(), now())`, id)
	step("open the message", chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%smessages/%d", base, id)),
		chromedp.WaitVisible(chromedp.ID("status"))))
	status, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("status")))
	step("read the status", err)
	reports, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("reports")))
	step("read the providers' reports", err)
	if !regexp.MustCompile(`sendgrid\s+bounced hard\s+kim@example\.com\s+5\.1\.1\s+550 5\.1\.1 unknown user`).MatchString(reports) {
		t.Fatalf("the providers' reports: %q", reports)
	}
	if !strings.Contains(deadRow, "550") || !strings.Contains(deadRow, "permanent") || !strings.Contains(deadRow, "no such user") {
		t.Fatalf("the dead letter row: %q", deadRow)
	}
	if !strings.Contains(done, "redrive") || status != "queued" {
		t.Fatalf("after Redrive: %q, message page says %q", done, status)
	}
	if s := scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, id); s != "queued" {
		t.Fatalf("the database says %s", s)
	}

	// The operator's switches: resume the paused channel, pause another for every
	// runner with a reason, let the suspended producer in again.
	result := func(what string, actions ...chromedp.Action[chromedp.Void]) string {
		t.Helper()
		step(what, chromedp.Do(ctx, append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(base), chromedp.WaitVisible(chromedp.ID("pause"))}, actions...)...))
		done, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("done")))
		step("read the result of "+what, err)
		return done
	}
	if done := result("resume", chromedp.Click(chromedp.ID("resume-sms")), chromedp.WaitVisible(chromedp.ID("done"))); done != "resume sms: resumed" {
		t.Fatalf("after Resume: %q", done)
	}
	if done := result("pause", chromedp.SendKeys(chromedp.ID("pause-channel"), "email"),
		chromedp.SendKeys(chromedp.ID("pause-reason"), "abuse from the sign-up form"),
		chromedp.Click(chromedp.ID("pause-submit")), chromedp.WaitVisible(chromedp.ID("done"))); done != "pause email: paused" {
		t.Fatalf("after Pause: %q", done)
	}
	if done := result("end suspension", chromedp.Click(chromedp.ID("end-suspension-bulk")), chromedp.WaitVisible(chromedp.ID("done"))); done != "end suspension bulk: ended" {
		t.Fatalf("after End suspension: %q", done)
	}
	if s := scalar[string](t, pool, `SELECT (SELECT string_agg(name || '=' || paused || ':' || coalesce(paused_by, '') || ':' || coalesce(paused_reason, ''), ',' ORDER BY name) FROM herald.channels)
		|| ' ' || (SELECT coalesce(suspended_until > now(), false) FROM herald.producers WHERE producer = 'bulk')`); s != "callbacks=false::,email=true:operator:abuse from the sign-up form,promo=false::,sms=false::,sms_backup=false:: false" {
		t.Fatalf("after the switches: %s", s)
	}
	// The status callback its channel refused: shown with the reason; sent again while
	// the channel still refuses it, a 400 that says why and changes nothing; once the
	// admin opens the channel, queued.
	step("read the set-aside events", chromedp.Do(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.ID("redispatch"))))
	setAside, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("set-aside")))
	step("read the set-aside table", err)
	if !regexp.MustCompile(`herald\.callbacks\s+\d+\s+` + fmt.Sprint(id) + `\s+dead\s+callback to producer \S+ refused: .*channel 'callbacks' must be open to 'herald:callbacks' alone`).MatchString(setAside) {
		t.Fatalf("set-aside events: %q", setAside)
	}
	again, _ := http.NewRequest("POST", base+"redispatch", nil)
	again.AddCookie(&http.Cookie{Name: "herald_console", Value: consoleToken})
	resp, err = http.DefaultClient.Do(again)
	if err != nil {
		t.Fatal(err)
	}
	refusal, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(refusal), "must be open to 'herald:callbacks' alone") ||
		scalar[int64](t, pool, `SELECT count(*) FROM herald.consumer_dead_letters`) != 1 {
		t.Fatalf("sending the callback again while its channel refuses it: %d %q", resp.StatusCode, refusal)
	}
	mustExec(t, pool, `UPDATE herald.channels SET producers = '{herald:callbacks}' WHERE name = 'callbacks'`)
	if done := result("send again", chromedp.Click(chromedp.ID("redispatch")), chromedp.WaitVisible(chromedp.ID("done"))); done != "send callbacks again: 1 queued" {
		t.Fatalf("after Send again: %q", done)
	}
	if s := scalar[string](t, pool, `SELECT (SELECT count(*) FROM herald.consumer_dead_letters) || ' ' ||
		(SELECT string_agg(payload->>'event', ',') FROM herald.messages WHERE producer = 'herald:callbacks')`); s != "0 dead" {
		t.Fatalf("after Send again the database says %s", s)
	}
	// A channel that does not exist is a 400 that changes nothing.
	bad, _ := http.NewRequest("POST", base+"pause", strings.NewReader(url.Values{"channel": {"nope"}, "reason": {"x"}}.Encode()))
	bad.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	bad.AddCookie(&http.Cookie{Name: "herald_console", Value: consoleToken})
	if resp, err := http.DefaultClient.Do(bad); err != nil || resp.StatusCode != 400 {
		t.Fatalf("pausing an unknown channel: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	closeBrowser()
	waitExit(t, serve, logs, 10*time.Second)
}

// Attacks through the operator's browser. Cross-site request forgery from the same
// site: a page on another port of the console's host (another app on the company's
// domain would do) posts the console's Pause form on its own, and the signed-in
// operator's browser sends the SameSite=Strict cookie with it (another port is the
// same site); the console refuses it (403) and the channel keeps sending. Hostile
// text: a dead letter whose payload and error (a receiver's answer, which the
// producer controls) are markup shows as text on the overview and the message's
// page: no element or script of theirs exists in the page.
func TestConsoleRefusesTheBrowsersOtherOrigins(t *testing.T) {
	t.Parallel()
	ctx, closeBrowser := browser(t)
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	const markup = `<img src=x onerror="document.title='pwned'"><script>document.title='pwned'</script>`
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook')`)
	id := scalar[int64](t, pool, `SELECT herald.enqueue('hooks', 'https://hooks.example.com/in', jsonb_build_object('note', $1::text))`, markup)
	mustExec(t, pool, `SELECT herald.fail(id, lease_token, 'HTTP 400: ' || $1, 'permanent', error_code => '400')
		FROM herald.claim_batch('w', 1)`, markup)
	addr := freeAddr(t)
	serve, logs := runnerProcessArgs(t, dbURL, []string{"serve"}, "HERALD_HTTP_ADDR="+addr, "HERALD_INTAKE=off", "HERALD_CONSOLE_TOKEN="+consoleToken)
	waitHTTP(t, addr)
	base := "http://" + addr + "/console/"
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form method="post" action="%spause"><input name="channel" value="email"><input name="reason" value="forged"></form>
<script>document.forms[0].submit()</script>`, base)
	}))
	defer attacker.Close()

	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("browser, %s: %v\n%s", what, err, logs.String())
		}
	}
	step("sign in", chromedp.Do(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), consoleToken), chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("dead-%d", id)))))
	// The hostile text, on both pages: shown, never parsed.
	for _, page := range []string{base, fmt.Sprintf("%smessages/%d", base, id)} {
		step("open "+page, chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitReady("body")))
		found, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[document.title, document.querySelectorAll('img, script').length,
			document.body.innerText.includes(`+"`"+markup+"`"+`)].join(' ')`))
		step("read "+page, err)
		if !strings.HasSuffix(found, " 0 true") || strings.Contains(found, "pwned") {
			t.Fatalf("%s: title, injected elements, text shown: %q", page, found)
		}
	}
	// The forged form: the browser lands on the console's answer to it.
	step("visit the attacker's page", chromedp.Do(ctx, chromedp.Navigate(attacker.URL),
		chromedp.Poll[chromedp.Void](`location.host === "`+addr+`" && document.readyState === "complete"`)))
	answer, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname + " " + document.body.innerText`))
	step("read the answer", err)
	if s := scalar[string](t, pool, `SELECT paused || ':' || coalesce(paused_reason, '') FROM herald.channels WHERE name = 'email'`); s != "false:" {
		t.Fatalf("the forged form paused the channel (%s); the browser shows %q", s, answer)
	}
	if !strings.Contains(answer, "another origin") {
		t.Fatalf("the browser shows %q, want the console's refusal", answer)
	}
	// The console's own form still works from the console.
	step("pause from the console", chromedp.Do(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.ID("pause")),
		chromedp.SendKeys(chromedp.ID("pause-channel"), "email"), chromedp.SendKeys(chromedp.ID("pause-reason"), "the operator's own"),
		chromedp.Click(chromedp.ID("pause-submit")), chromedp.WaitVisible(chromedp.ID("done"))))
	if s := scalar[string](t, pool, `SELECT paused || ':' || coalesce(paused_reason, '') FROM herald.channels WHERE name = 'email'`); s != "true:the operator's own" {
		t.Fatalf("the console's own Pause: %s", s)
	}
	closeBrowser()
	waitExit(t, serve, logs, 15*time.Second)
}
