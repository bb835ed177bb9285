package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, 100 on Linux
// for every architecture Go supports there).
const clockTick = 10 * time.Millisecond

// statFields returns the fields of /proc/<pid>/stat after the command name (which is
// in parentheses and may hold spaces): f[1] is the parent's pid, f[11] and f[12]
// utime and stime, f[13] and f[14] cutime and cstime (children waited for). nil
// when the process is gone.
func statFields(pid int) []string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return nil
	}
	return f
}

// ticks sums fields of statFields as a duration.
func ticks(f []string, fields ...int) time.Duration {
	var t int64
	for _, k := range fields {
		v, _ := strconv.ParseInt(f[k], 10, 64)
		t += v
	}
	return time.Duration(t) * clockTick
}

// postmaster finds the PostgreSQL server the bench uses when it runs on this
// machine: the parent of this session's backend. It returns 0 for a server
// elsewhere (or one whose processes this user cannot see): the server's CPU is then
// not reported. A local process that merely has a remote backend's pid is told
// apart by its name: both it and its parent must be called postgres.
func postmaster(ctx context.Context, db *database) int {
	var backend int
	if err := db.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return 0
	}
	f := statFields(backend)
	if f == nil || !isPostgres(backend) {
		return 0
	}
	pm, _ := strconv.Atoi(f[1])
	if pm <= 1 || statFields(pm) == nil || !isPostgres(pm) {
		return 0
	}
	return pm
}

// isPostgres tells whether a process's command name (/proc/<pid>/comm) is postgres.
func isPostgres(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	return err == nil && strings.TrimSpace(string(b)) == "postgres"
}

// serverCPU is all the CPU time the server has used so far: the postmaster's own,
// its live children's (backends, autovacuum and background workers), and that of
// its children that have ended (the postmaster waits for each: cutime and cstime).
// The difference of two readings is thus the server's whole CPU time in between,
// processes that started or ended in between included.
func serverCPU(pm int) time.Duration {
	f := statFields(pm)
	if f == nil {
		return 0
	}
	t := ticks(f, 11, 12, 13, 14)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return t
	}
	parent := strconv.Itoa(pm)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if c := statFields(pid); c != nil && c[1] == parent {
			t += ticks(c, 11, 12)
		}
	}
	return t
}

// clientCPU is the CPU time the given processes have used so far (all their
// threads); one that has ended counts 0.
func clientCPU(pids []int) time.Duration {
	var t time.Duration
	for _, p := range pids {
		if f := statFields(p); f != nil {
			t += ticks(f, 11, 12)
		}
	}
	return t
}

// cpuMeter accounts the CPU time a drain costs on each side of the connection: the
// database server's processes and the clients' (herald's runners, or the bench's
// own loop; both include the bench's watcher).
type cpuMeter struct {
	pm      int
	clients []int
	s0, c0  time.Duration
}

// startCPU takes the first reading; pm is the postmaster (0: a server elsewhere).
// The clients must stay alive until stop.
func startCPU(pm int, clients []int) *cpuMeter {
	m := &cpuMeter{pm: pm, clients: clients}
	if pm > 0 {
		m.s0 = serverCPU(pm)
	}
	m.c0 = clientCPU(clients)
	return m
}

// stop returns the CPU time each side has used since startCPU, and whether the
// server's was measured.
func (m *cpuMeter) stop() (server, clients time.Duration, known bool) {
	if m.pm > 0 {
		server = serverCPU(m.pm) - m.s0
	}
	return server, clientCPU(m.clients) - m.c0, m.pm > 0
}

// cpuCommand is `bench cpu [PID ...]`: it prints, in microseconds, the CPU time the
// database server has used so far (serverCPU; "-" when the server is not on this
// machine) and the CPU time the given processes have used so far (clientCPU), so
// that bench/compare/run.sh takes two readings around another queue's drain with
// the same accounting as the drain scenario. It creates no database.
func cpuCommand(args []string) int {
	var pids []int
	for _, a := range args {
		pid, err := strconv.Atoi(a)
		if err != nil || pid < 1 {
			fmt.Fprintf(os.Stderr, "bench cpu: %q is not a process id\n", a)
			return 2
		}
		pids = append(pids, pid)
	}
	ctx := context.Background()
	server, err := serverURL()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench cpu: %v\n", err)
		return 1
	}
	pool, err := pgxpool.New(ctx, server)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench cpu: %v\n", err)
		return 1
	}
	defer pool.Close()
	serverTime := "-"
	if pm := postmaster(ctx, &database{pool: pool, url: server}); pm > 0 {
		serverTime = strconv.FormatInt(serverCPU(pm).Microseconds(), 10)
	}
	fmt.Println(serverTime, clientCPU(pids).Microseconds())
	return 0
}
