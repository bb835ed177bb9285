package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/herald/herald/runner/sender"
)

// heldSender's sends wait for release; Close says it is closed on closed.
type heldSender struct {
	name    string
	started chan string
	release chan struct{}
	closed  chan string
}

func (h *heldSender) Send(ctx context.Context, m sender.Message) (sender.Result, error) {
	h.started <- h.name
	<-h.release
	return sender.Result{ProviderMessageID: h.name}, nil
}

func (h *heldSender) Check(context.Context) error { return nil }

func (h *heldSender) Close() error { h.closed <- h.name; return nil }

// A reload swaps the sender for new sends only when a secret file's content changed;
// a send in flight finishes on the old sender, which is closed after it and not
// before; settings that no longer build keep the current sender.
func TestAReloadLetsSendsInFlightFinish(t *testing.T) {
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	started, closed, release := make(chan string, 4), make(chan string, 4), make(chan struct{})
	builds := 0
	var buildErr error
	build := func() (sender.Sender, []string, error) {
		builds++
		return &heldSender{name: "second", started: started, release: release, closed: closed}, []string{file}, buildErr
	}
	r, err := newReloading("email", &heldSender{name: "first", started: started, release: release, closed: closed}, []string{file}, build,
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(); err != nil || builds != 0 {
		t.Fatalf("unchanged file: %v, %d builds", err, builds)
	}
	done := make(chan string)
	go func() { res, _ := r.Send(context.Background(), sender.Message{ID: 1}); done <- res.ProviderMessageID }()
	if s := <-started; s != "first" {
		t.Fatalf("sent on %s", s)
	}
	if err := os.WriteFile(file, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(); err != nil || builds != 1 {
		t.Fatalf("changed file: %v, %d builds", err, builds)
	}
	select {
	case s := <-closed:
		t.Fatalf("%s closed while its send was in flight", s)
	default:
	}
	go func() { _, _ = r.Send(context.Background(), sender.Message{ID: 2}) }()
	if s := <-started; s != "second" {
		t.Fatalf("a send after the reload went to %s", s)
	}
	close(release)
	if id := <-done; id != "first" {
		t.Fatalf("the send in flight finished on %s", id)
	}
	if s := <-closed; s != "first" {
		t.Fatalf("closed %s, want the first", s)
	}
	buildErr = errors.New("HERALD_SENDGRID_URL: bad")
	if err := os.WriteFile(file, []byte("three"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(); err == nil {
		t.Fatal("a build that fails was taken")
	}
}
