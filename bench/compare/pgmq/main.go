// Command pgmq drains preloaded messages with pgmq (github.com/pgmq/pgmq, the
// PostgreSQL extension), for the drain comparison of bench/compare/run.sh. It uses
// only pgmq's SQL API (create, send_batch, read, delete) of an extension installed
// on the server; none of pgmq's code is here.
//
// Usage:
//
//	pgmq prepare -db URL -jobs N     CREATE EXTENSION pgmq in URL's database, create
//	                                  the queue, send N messages
//	pgmq work -db URL [-batch B] [-ready FILE]   read B messages at a time and delete
//	                                              them until killed; create FILE once
//	                                              connected
//	pgmq watch -db URL -jobs N [-ready FILE]     wait until the queue is empty, print
//	                                              messages/s
//
// A worker is what the issue calls "pgmq read+delete": pgmq.read(queue, 30, B)
// (SELECT … FOR UPDATE SKIP LOCKED, then a visibility timeout of 30 s), every column
// of every message scanned as a sender would need it, then one pgmq.delete(queue,
// ids) — the message is gone, no receipt kept. pgmq has no notifications: a read
// that finds nothing waits 10 ms before the next (during a drain none does).
// watch's clock starts as the River command's does: when FILE exists.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// queue is the pgmq queue the comparison uses (its table is pgmq.q_herald_bench).
const queue = "herald_bench"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pgmq prepare|work|watch -db URL [-jobs N] [-batch B]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	db := fs.String("db", "", "database URL")
	jobs := fs.Int("jobs", 200000, "messages to send or wait for")
	batch := fs.Int("batch", 1000, "work: messages per pgmq.read")
	ready := fs.String("ready", "", "work: create this file once connected; watch: start the clock when it exists")
	_ = fs.Parse(os.Args[2:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	pool, err := pgxpool.New(ctx, *db)
	if err != nil {
		fail(err)
	}
	defer pool.Close()
	switch os.Args[1] {
	case "prepare":
		err = prepare(ctx, pool, *jobs)
	case "work":
		err = work(ctx, pool, *batch, *ready)
	case "watch":
		err = watch(ctx, pool, *jobs, *ready)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil && ctx.Err() == nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "pgmq:", err)
	os.Exit(1)
}

// prepare sends n messages shaped like the herald drain's (channel, recipient,
// payload), 1,000 per pgmq.send_batch, and leaves the queue vacuumed and analysed
// as the herald bench leaves its table.
func prepare(ctx context.Context, pool *pgxpool.Pool, n int) error {
	if _, err := pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pgmq`); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `SELECT pgmq.create($1)`, queue); err != nil {
		return err
	}
	for done := 0; done < n; done += 1000 {
		msgs := make([][]byte, min(1000, n-done))
		for i := range msgs {
			m, err := json.Marshal(map[string]any{"channel": "email", "recipient": fmt.Sprintf("u%d@example.com", done+i+1),
				"payload": map[string]string{"subject": "Hi", "text": "Hello"}})
			if err != nil {
				return err
			}
			msgs[i] = m
		}
		if _, err := pool.Exec(ctx, `SELECT count(*) FROM pgmq.send_batch($1, $2::jsonb[])`, queue, msgs); err != nil {
			return err
		}
	}
	_, err := pool.Exec(ctx, `VACUUM ANALYZE pgmq.q_`+queue)
	return err
}

// work reads and deletes until killed.
func work(ctx context.Context, pool *pgxpool.Pool, batch int, ready string) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if ready != "" {
		if err := os.WriteFile(ready, nil, 0o644); err != nil {
			return err
		}
	}
	for {
		rows, err := conn.Query(ctx, `SELECT msg_id, read_ct, enqueued_at, vt, message FROM pgmq.read($1, 30, $2)`, queue, batch)
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			var reads int32
			var enqueued, vt time.Time
			var message []byte
			if err := rows.Scan(&id, &reads, &enqueued, &vt, &message); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) == 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		if _, err := conn.Exec(ctx, `SELECT count(*) FROM pgmq.delete($1, $2::bigint[])`, queue, ids); err != nil {
			return err
		}
	}
}

// watch waits for ready, then polls every 50 ms until the queue is empty and prints
// the rate.
func watch(ctx context.Context, pool *pgxpool.Pool, n int, ready string) error {
	for ready != "" {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	lastCount := start
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		var more bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pgmq.q_`+queue+`)`).Scan(&more); err != nil {
			return err
		}
		if !more {
			elapsed := time.Since(start)
			fmt.Fprintf(os.Stderr, "\r\033[Kpgmq: %d messages in %.2fs\n", n, elapsed.Seconds())
			fmt.Printf("%.0f\n", float64(n)/elapsed.Seconds())
			return nil
		}
		if time.Since(lastCount) >= time.Second {
			var left int64
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM pgmq.q_`+queue).Scan(&left); err != nil {
				return err
			}
			lastCount = time.Now()
			fmt.Fprintf(os.Stderr, "\r\033[Kpgmq: %d of %d left, %.1fs", left, n, time.Since(start).Seconds())
		}
		if time.Since(start) > 10*time.Minute {
			return fmt.Errorf("messages left after 10 minutes")
		}
	}
}
