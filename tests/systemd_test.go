package tests

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald/herald/tests/testdb"
)

// herald run under systemd (Type=notify, WatchdogSec): a real runner process speaks
// sd_notify(3) on NOTIFY_SOCKET, here a datagram socket of the test's, as systemd's
// own: READY=1 with its channels once it claims, WATCHDOG=1 while its claim loop
// turns (every half WATCHDOG_USEC), STOPPING=1 on SIGTERM, then a clean exit. A
// WatchdogSec no longer than a turn of the claim loop may take (a claim bounded by
// the lease, and the poll) would have systemd kill a healthy runner: refused at
// start, naming the settings, and READY never sent.
func TestRunnerTellsSystemdItsState(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	dir, err := os.MkdirTemp("", "sd") // a socket's path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "notify")
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	states := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := sock.Read(buf)
			if err != nil {
				close(states)
				return
			}
			states <- string(buf[:n])
		}
	}()
	var cmd *exec.Cmd
	var logs *logBuffer
	next := func(what string) string {
		t.Helper()
		select {
		case s := <-states:
			return s
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s from the runner\n%s", what, logs.String())
			return ""
		}
	}

	env := []string{"NOTIFY_SOCKET=" + path, "HERALD_SENDER_EMAIL=sink:-", "HERALD_SENDER_SMS=sink:-"}
	cmd, logs = runnerProcess(t, dbURL, append(env, "WATCHDOG_USEC=2000000", "HERALD_LEASE=1s", "HERALD_POLL_INTERVAL=100ms")...)
	if s := next("READY=1"); s != "READY=1\nSTATUS=claiming for email, sms" {
		t.Fatalf("first notification %q\n%s", s, logs.String())
	}
	if s := next("watchdog ping"); s != "WATCHDOG=1" {
		t.Fatalf("after READY: %q", s)
	}
	waitExit(t, cmd, logs, 15*time.Second)
	for {
		s := next("STOPPING=1")
		if s == "WATCHDOG=1" {
			continue
		}
		if s != "STOPPING=1\nSTATUS=stopping: finishing in-flight sends" {
			t.Fatalf("on SIGTERM: %q", s)
		}
		break
	}

	// Another socket for the refused runner, read once it has exited.
	refusedPath := filepath.Join(dir, "refused")
	refused, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: refusedPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer refused.Close()
	cmd, logs = runnerProcess(t, dbURL, "NOTIFY_SOCKET="+refusedPath, "HERALD_SENDER_EMAIL=sink:-", "WATCHDOG_USEC=500000") // the default lease alone is 30s
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(logs.String(), "WatchdogSec (500ms) is not longer than") ||
		!strings.Contains(logs.String(), "HERALD_LEASE + HERALD_POLL_INTERVAL = 31s") {
		t.Fatalf("a watchdog shorter than a turn: exit %d (%v)\n%s", code, err, logs.String())
	}
	_ = refused.SetReadDeadline(time.Now().Add(100 * time.Millisecond)) // it has exited: anything it sent is queued
	if n, err := refused.Read(make([]byte, 4096)); err == nil {
		t.Fatalf("a refused runner notified systemd (%d bytes)", n)
	}
}
