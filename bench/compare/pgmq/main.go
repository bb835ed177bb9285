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
// The command line and watch are bench/compare/drain's, shared with the River command.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"github.com/herald/herald/bench/compare/drain"
	"github.com/jackc/pgx/v5/pgxpool"
)

// queue is the pgmq queue the comparison uses (its table is pgmq.q_herald_bench).
const queue = "herald_bench"

// batch is how many messages a worker reads at a time (-batch).
var batch int

func main() {
	drain.Main(drain.System{
		Name: "pgmq",
		Flags: func(fs *flag.FlagSet) {
			fs.IntVar(&batch, "batch", 1000, "work: messages per pgmq.read")
		},
		Prepare: prepare,
		Work:    work,
		Pending: `FROM pgmq.q_` + queue,
	})
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
func work(ctx context.Context, pool *pgxpool.Pool, started func() error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if err := started(); err != nil {
		return err
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
