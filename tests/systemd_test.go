package tests

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/herald/herald/tests/testdb"
)

// herald run under systemd (Type=notify, WatchdogSec): a real runner process speaks
// sd_notify(3) on NOTIFY_SOCKET, here a datagram socket of the test's, as systemd's
// own: READY=1 with its channels once it claims, WATCHDOG=1 while its claim loop
// turns (every half WATCHDOG_USEC, however short), STOPPING=1 on SIGTERM, then a
// clean exit.
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
	states := make(chan string, 1024)
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
	cmd, logs = runnerProcess(t, dbURL, append(env, "WATCHDOG_USEC=2000000")...)
	if s := next("READY=1"); s != "READY=1\nSTATUS=claiming for email, sms" {
		t.Fatalf("first notification %q\n%s", s, logs.String())
	}
	for range 2 { // fed every second, though a turn of the claim loop may take 31 s: a healthy runner is never killed
		if s := next("watchdog ping"); s != "WATCHDOG=1" {
			t.Fatalf("after READY: %q", s)
		}
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
}
