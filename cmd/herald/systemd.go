package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// systemd speaks the service manager's notification protocol (sd_notify(3)) when
// systemd started herald with Type=notify (NOTIFY_SOCKET set; nil otherwise):
// READY=1 once herald serves, STOPPING=1 when it begins to stop, a STATUS= line with
// each, and WATCHDOG=1 every half WatchdogSec (WATCHDOG_USEC, for this process) while
// alive says herald is well, so that systemd restarts one that stops turning.
type systemd struct {
	conn     *net.UnixConn
	watchdog time.Duration // 0: no watchdog
}

// newSystemd connects to NOTIFY_SOCKET (a path, or @ for an abstract socket). It is
// nil, with no error, when the variable is unset: herald runs without systemd.
func newSystemd() (*systemd, error) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil, nil
	}
	addr := &net.UnixAddr{Name: path, Net: "unixgram"}
	if strings.HasPrefix(path, "@") {
		addr.Name = "\x00" + path[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, addr)
	if err != nil {
		return nil, fmt.Errorf("NOTIFY_SOCKET: %w", err)
	}
	s := &systemd{conn: conn}
	if v := os.Getenv("WATCHDOG_USEC"); v != "" {
		pid := os.Getenv("WATCHDOG_PID")
		usec, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil || usec <= 0:
			conn.Close()
			return nil, fmt.Errorf("WATCHDOG_USEC=%q: not a positive number of microseconds", v)
		case pid == "" || pid == strconv.Itoa(os.Getpid()):
			s.watchdog = time.Duration(usec) * time.Microsecond
		}
	}
	return s, nil
}

// notify sends state lines ("READY=1", "STATUS=…") in one datagram, waiting at most a
// second for room in the socket (a manager that does not read its queue never holds
// herald up); a failure is returned, never fatal to herald.
func (s *systemd) notify(state ...string) error {
	if s == nil {
		return nil
	}
	_ = s.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, err := s.conn.Write([]byte(strings.Join(state, "\n")))
	return err
}

// watch pings systemd's watchdog every half WatchdogSec until ctx ends, while alive
// reports herald well; once ctx has ended (herald stopping) it pings regardless until
// stop is closed, as systemd's stop timeout, not the watchdog, bounds a shutdown.
func (s *systemd) watch(ctx context.Context, stop <-chan struct{}, alive func() bool) {
	if s == nil || s.watchdog == 0 {
		return
	}
	tick := time.NewTicker(s.watchdog / 2)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if well := alive(); well || ctx.Err() != nil {
				_ = s.notify("WATCHDOG=1")
			}
		}
	}
}

// close closes the socket.
func (s *systemd) close() {
	if s != nil {
		s.conn.Close()
	}
}
