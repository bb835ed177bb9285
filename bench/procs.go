package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// buildHerald compiles the herald binary the runner scenarios start as processes
// (so their CPU and memory are theirs, as in production).
func buildHerald(ctx context.Context) (string, error) {
	dir, err := os.MkdirTemp("", "herald-bench-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "herald")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/herald").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// runnerProc is one `herald run` process.
type runnerProc struct {
	cmd *exec.Cmd
}

func startRunner(bin, dbURL string, env ...string) (*runnerProc, error) {
	cmd := exec.Command(bin, "run")
	cmd.Env = append(os.Environ(), append([]string{"DATABASE_URL=" + dbURL, "HERALD_HTTP_ADDR=off", "HERALD_LOG_LEVEL=warn"}, env...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &runnerProc{cmd: cmd}, nil
}

// rssBytes reads the process's resident set size from /proc.
func (p *runnerProc) rssBytes() int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// stop sends SIGTERM and waits (SIGKILL after 15s).
func (p *runnerProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}
