package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// variant is one way of doing a scenario's work: a statement (or a Go call, when
// call is set) run in a loop.
type variant struct {
	name     string
	triggers bool // herald's triggers on herald.messages enabled during the phase
	// suppressed: herald.suppressions holds one entry, for another recipient, during
	// the phase (a deployment that has seen a bounce); otherwise it is empty.
	suppressed bool
	sql        string
	call       func(ctx context.Context, conn *pgxpool.Conn) error
}

// result is what the rounds of one variant measured, in messages per second.
type result struct {
	name  string
	rates []float64
}

func (r result) median() float64 {
	s := append([]float64(nil), r.rates...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// alternate runs every variant once per round, in turn, with the same arguments.
func alternate(ctx context.Context, db *database, o options, label string, vs []variant, perOp int, args func() []any) ([]result, error) {
	a := make([][]any, len(vs))
	for i := range a {
		a[i] = args()
	}
	return alternateArgs(ctx, db, o, label, vs, perOp, a)
}

// alternateArgs runs every variant once per round, in turn (herald and baseline
// alternate, so drift on a shared machine hits both), each phase for o.duration on
// o.conns connections, and returns each variant's rates. perOp is how many
// messages one execution stores. Before the first round every variant runs for
// o.warmup, unmeasured: otherwise the variant that runs first (herald's) alone pays
// for opening the pool's connections, preparing its statement on each, and the
// new server processes' first calls (catalog caches, PL/pgSQL compilation).
func alternateArgs(ctx context.Context, db *database, o options, label string, vs []variant, perOp int, args [][]any) ([]result, error) {
	out := make([]result, len(vs))
	for i, v := range vs {
		out[i].name = v.name
	}
	if o.warmup > 0 {
		w := o
		w.duration = o.warmup
		for i, v := range vs {
			if err := db.enter(ctx, v); err != nil {
				return nil, err
			}
			if _, _, err := loop(ctx, db, w, fmt.Sprintf("%s warm-up: %s", label, v.name), v, args[i]); err != nil {
				return nil, fmt.Errorf("%s (warm-up): %w", v.name, err)
			}
		}
	}
	for r := 0; r < o.rounds; r++ {
		for i, v := range vs {
			if err := db.reset(ctx); err != nil {
				return nil, err
			}
			if err := db.enter(ctx, v); err != nil {
				return nil, err
			}
			phase := fmt.Sprintf("%s round %d/%d: %s", label, r+1, o.rounds, v.name)
			ops, elapsed, err := loop(ctx, db, o, phase, v, args[i])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", v.name, err)
			}
			out[i].rates = append(out[i].rates, float64(ops*int64(perOp))/elapsed.Seconds())
		}
	}
	return out, db.enter(ctx, variant{triggers: true})
}

// loop runs v on o.conns connections for o.duration and counts executions,
// showing a live line on stderr.
func loop(ctx context.Context, db *database, o options, phase string, v variant, args []any) (int64, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var ops atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < o.conns; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := db.pool.Acquire(context.Background())
			if err != nil {
				once.Do(func() { firstErr = err })
				return
			}
			defer conn.Release()
			for ctx.Err() == nil {
				var err error
				if v.call != nil {
					err = v.call(context.Background(), conn)
				} else {
					_, err = conn.Exec(context.Background(), v.sql, args...)
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				ops.Add(1)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			elapsed := time.Since(start)
			fmt.Fprintf(os.Stderr, "\r\033[K%s: %d ops in %.1fs\n", phase, ops.Load(), elapsed.Seconds())
			return ops.Load(), elapsed, firstErr
		case <-tick.C:
			fmt.Fprintf(os.Stderr, "\r\033[K%s: %d ops, %.0f/s", phase, ops.Load(), float64(ops.Load())/time.Since(start).Seconds())
		}
	}
}

// inTurn runs herald's side and the baseline's of one round, herald first in even
// rounds and the baseline first in odd ones, so neither always meets a warmer cache.
func inTurn(round int, herald, baseline func() error) error {
	first, second := herald, baseline
	if round%2 == 1 {
		first, second = baseline, herald
	}
	if err := first(); err != nil {
		return err
	}
	return second()
}
