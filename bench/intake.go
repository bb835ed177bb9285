package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald/herald/runner/intake"
)

// intakeBench: what the intake's per-token bounds cost a lone producer. o.conns HTTP
// clients of one token POST single messages to the intake over loopback for
// o.duration, alternating for o.rounds. herald = the intake as herald run serves it
// (a pool of 4, the HTTP services' default; a token uses at most 3 of it at once,
// at most 16 requests in progress); baseline = the same intake without the per-token
// bounds (the token may use the whole pool, requests unbounded). No rate limit. Rates
// are accepted (202) messages per second.
func intakeBench(ctx context.Context, db *database, o options) ([]row, error) {
	serve := func(cfg intake.Config) (*httptest.Server, *pgxpool.Pool, error) {
		conf, err := pgxpool.ParseConfig(db.url)
		if err != nil {
			return nil, nil, err
		}
		conf.MaxConns = 4
		pool, err := pgxpool.NewWithConfig(ctx, conf)
		if err != nil {
			return nil, nil, err
		}
		cfg.Tokens = []intake.Token{{Name: "bench", Secret: "tok-bench"}}
		return httptest.NewServer(intake.Handler(pool, cfg)), pool, nil
	}
	bounded, p1, err := serve(intake.Config{})
	if err != nil {
		return nil, err
	}
	defer p1.Close()
	defer bounded.Close()
	open, p2, err := serve(intake.Config{MaxInFlight: -1, TokenConns: 4})
	if err != nil {
		return nil, err
	}
	defer p2.Close()
	defer open.Close()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.conns}}
	body := `{"channel":"email","recipient":"ana@example.com","payload":` + payload + `}`
	rate := func(url string) (float64, error) {
		var accepted atomic.Int64
		var firstErr error
		var once sync.Once
		var wg sync.WaitGroup
		t0 := time.Now()
		for range o.conns {
			wg.Go(func() {
				for time.Since(t0) < o.duration && ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/messages", strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer tok-bench")
					resp, err := client.Do(req)
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusAccepted {
							err = fmt.Errorf("answered %d", resp.StatusCode)
						}
					}
					if err != nil {
						once.Do(func() { firstErr = err })
						return
					}
					accepted.Add(1)
				}
			})
		}
		wg.Wait()
		return float64(accepted.Load()) / time.Since(t0).Seconds(), firstErr
	}
	h, b := result{name: "per-token bounds"}, result{name: "no per-token bounds"}
	for round := range o.rounds {
		for _, v := range []struct {
			url string
			res *result
		}{{bounded.URL, &h}, {open.URL, &b}} {
			r, err := rate(v.url)
			if err != nil {
				return nil, err
			}
			v.res.rates = append(v.res.rates, r)
		}
		fmt.Printf("  intake round %d: bounded %.0f/s, unbounded %.0f/s\n", round+1, h.rates[round], b.rates[round])
		if _, err := db.pool.Exec(ctx, `TRUNCATE herald.messages CASCADE`); err != nil {
			return nil, err
		}
	}
	return []row{ratioRow(fmt.Sprintf("intake: POST /v1/messages, one token, %d clients, pool of 4: per-token bounds vs none", o.conns),
		"messages/s", h, b, 0)}, nil
}
