package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// notifySocket listens where systemd would (NOTIFY_SOCKET) and points the variable
// at it.
func notifySocket(t *testing.T) *net.UnixConn {
	t.Helper()
	dir, err := os.MkdirTemp("", "sd") // a short path: a socket's is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return ln
}

// datagrams reads what has been sent to ln.
func datagrams(t *testing.T, ln *net.UnixConn) []string {
	t.Helper()
	var got []string
	buf := make([]byte, 4096)
	_ = ln.SetReadDeadline(time.Now().Add(100 * time.Millisecond)) // every write has returned: this reads what is queued
	for {
		n, err := ln.Read(buf)
		if err != nil {
			return got
		}
		got = append(got, string(buf[:n]))
	}
}

// The watchdog is pinged on a tick only while the claim loop turns (alive), and on
// every tick once herald is stopping, whatever alive says; a WATCHDOG_PID of another
// process is not this one's watchdog.
func TestWatchdogPingsOnlyWhileTheLoopTurns(t *testing.T) {
	ln := notifySocket(t)
	t.Setenv("WATCHDOG_USEC", "20000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	sd, err := newSystemd()
	if err != nil || sd == nil || sd.watchdog != 20*time.Millisecond {
		t.Fatalf("newSystemd: %+v %v", sd, err)
	}
	defer sd.close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answers := []bool{true, false, false, true, false, false, false}
	stop := make(chan struct{})
	calls := 0
	sd.watch(ctx, stop, func() bool {
		a := answers[calls]
		calls++
		switch calls {
		case 5: // herald begins to stop: the last three ticks ping although the loop does not turn
			cancel()
		case len(answers):
			close(stop)
		}
		return a
	})
	if got := datagrams(t, ln); len(got) != 5 || got[0] != "WATCHDOG=1" {
		t.Fatalf("pings %q, want 5: two while turning, three as the stop began and after", got)
	}

	t.Setenv("WATCHDOG_PID", "1")
	if sd, err := newSystemd(); err != nil || sd.watchdog != 0 {
		t.Fatalf("another process's watchdog taken: %+v %v", sd, err)
	}
	t.Setenv("WATCHDOG_USEC", "soon")
	if _, err := newSystemd(); err == nil {
		t.Fatal("WATCHDOG_USEC=soon taken")
	}
}
