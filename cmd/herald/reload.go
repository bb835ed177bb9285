package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/herald/herald/runner/sender"
)

// reloading is a channel's sender whose secrets come from files (HERALD_…_FILE):
// Kubernetes, Vault Agent and the like rotate them in place, and a sender built once
// would keep the old credentials until a restart (a provider then refuses them, and
// the channel stays paused; a webhook receiver that dropped the old signing secret
// refuses every request). Reload builds the sender again when a file's content has
// changed: on SIGHUP, and for a provider's sender with a check (checkedReloading) on
// every Check too (the start check, and the probe of a channel a runner paused, so a
// rotation heals within one probe interval). Sends in flight finish on the sender
// they began with, which is closed once they have.
type reloading struct {
	channel string
	build   func() (sender.Sender, []string, error) // the sender again, and the files it read
	log     *slog.Logger

	mu    sync.Mutex
	cur   *generation
	files map[string][]byte // path: the content the current sender was built with
}

// generation is one build of the sender and the sends using it.
type generation struct {
	s     sender.Sender
	sends sync.WaitGroup
}

// newReloading wraps s, built from the secret files paths, with build to make it
// again.
func newReloading(channel string, s sender.Sender, paths []string, build func() (sender.Sender, []string, error), log *slog.Logger) (*reloading, error) {
	r := &reloading{channel: channel, build: build, log: log, cur: &generation{s: s}}
	files, err := readAll(paths)
	if err != nil {
		return nil, err
	}
	r.files = files
	return r, nil
}

func readAll(paths []string) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		files[p] = b
	}
	return files, nil
}

// Send sends on the current sender.
func (r *reloading) Send(ctx context.Context, m sender.Message) (sender.Result, error) {
	r.mu.Lock()
	g := r.cur
	g.sends.Add(1)
	r.mu.Unlock()
	defer g.sends.Done()
	return g.s.Send(ctx, m)
}

// checkedReloading is a reloading provider's sender that has a check (sender.Checker).
type checkedReloading struct{ *reloading }

// Check reloads the secrets if they changed, then checks the current sender.
func (r checkedReloading) Check(ctx context.Context) error {
	if err := r.Reload(); err != nil {
		return sender.Configuration(err, "")
	}
	r.mu.Lock()
	s := r.cur.s
	r.mu.Unlock()
	if c, ok := s.(sender.Checker); ok {
		return c.Check(ctx)
	}
	return nil
}

// Reload builds the sender again when a secret file's content changed since the
// current one was built; the old one is closed once its sends are done. Unchanged
// files do nothing; a file that cannot be read, or settings that no longer build,
// leave the current sender and say why.
func (r *reloading) Reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for p, old := range r.files {
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("channel %s: secret file: %w", r.channel, err)
		}
		changed = changed || !bytes.Equal(b, old)
	}
	if !changed {
		return nil
	}
	s, paths, err := r.build()
	if err != nil {
		if s != nil {
			closeSender(s)
		}
		return fmt.Errorf("channel %s: its secrets changed, but: %w", r.channel, err)
	}
	files, err := readAll(paths)
	if err != nil {
		closeSender(s)
		return fmt.Errorf("channel %s: secret file: %w", r.channel, err)
	}
	old := r.cur
	r.cur, r.files = &generation{s: s}, files
	go func() { old.sends.Wait(); closeSender(old.s) }()
	r.log.Info("secrets reloaded: the channel's sender is built again with the files' new content", "channel", r.channel)
	return nil
}

// Close closes the current sender once its sends are done.
func (r *reloading) Close() error {
	r.mu.Lock()
	g := r.cur
	r.mu.Unlock()
	g.sends.Wait()
	return closeSender(g.s)
}

// closeSender closes s if it holds anything (closer).
func closeSender(s sender.Sender) error {
	if c, ok := s.(closer); ok {
		return c.Close()
	}
	return nil
}

// reloadAll reloads every reloading sender of senders (SIGHUP), logging what fails.
func reloadAll(senders map[string]sender.Sender, log *slog.Logger) {
	for _, s := range senders {
		if r, ok := s.(interface{ Reload() error }); ok {
			if err := r.Reload(); err != nil {
				log.Error("reloading secrets failed; the channel keeps its sender", "err", err)
			}
		}
	}
}
