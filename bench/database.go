package main

import (
	"context"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	heraldsql "github.com/herald/herald/sql"
)

// benchDatabase is the database the bench creates afresh on the server.
const benchDatabase = "herald_bench"

// database is the bench's own database with herald installed, plus two baseline
// tables without triggers: public.bare, the same columns, defaults, constraints and
// indexes as herald.messages (the enqueue and latency baselines, and the drain's
// with -drain-baseline herald), and public.bare_queue, the same columns, defaults
// and constraints with only the indexes a raw SQL queue loop needs, the primary key
// and the claim order (the drain's baseline by default).
type database struct {
	pool *pgxpool.Pool
	url  string
}

func prepareDatabase(ctx context.Context, server string) (*database, error) {
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", redact(server), err)
	}
	defer admin.Close(ctx)
	for _, q := range []string{
		`DROP DATABASE IF EXISTS ` + benchDatabase + ` WITH (FORCE)`,
		`CREATE DATABASE ` + benchDatabase,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			return nil, err
		}
	}
	u, err := url.Parse(server)
	if err != nil {
		return nil, err
	}
	u.Path = "/" + benchDatabase
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	if _, err := heraldsql.Migrate(ctx, conn, false); err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE public.bare (LIKE herald.messages INCLUDING ALL)`); err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE public.bare_queue (LIKE herald.messages INCLUDING DEFAULTS
			INCLUDING IDENTITY INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION, PRIMARY KEY (id));
		CREATE INDEX bare_queue_claim_idx ON public.bare_queue (priority, run_at, id) WHERE status = 'queued'`); err != nil {
		return nil, err
	}
	conf, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, err
	}
	conf.MaxConns = 64
	pool, err := pgxpool.NewWithConfig(ctx, conf)
	if err != nil {
		return nil, err
	}
	return &database{pool: pool, url: u.String()}, nil
}

func (d *database) close() { d.pool.Close() }

// reset empties the tables the scenarios write, so every phase starts alike.
func (d *database) reset(ctx context.Context) error {
	_, err := d.pool.Exec(ctx, `TRUNCATE herald.messages, herald.log_statements, public.bare, public.bare_queue;
		UPDATE herald.log_counter SET next_offset = 1; CHECKPOINT`)
	return err
}

// enter sets the database up for a phase of v: herald's triggers on herald.messages
// on or off, and herald.suppressions empty or holding one entry for a recipient no
// variant sends to.
func (d *database) enter(ctx context.Context, v variant) error {
	verb := "DISABLE"
	if v.triggers {
		verb = "ENABLE"
	}
	if _, err := d.pool.Exec(ctx, `ALTER TABLE herald.messages `+verb+` TRIGGER USER`); err != nil {
		return err
	}
	if _, err := d.pool.Exec(ctx, `DELETE FROM herald.suppressions`); err != nil || !v.suppressed {
		return err
	}
	_, err := d.pool.Exec(ctx, `INSERT INTO herald.suppressions (kind, recipient, reason) VALUES ('email', 'gone@example.com', 'bounced')`)
	return err
}

func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "the database"
	}
	return u.Redacted()
}

// sendAll completes every message a claim hands out (1,000 at a time), gives the log's
// events their offsets and analyzes the tables: a sent backlog with its log, as the
// callbacks and forget scenarios start from.
func (d *database) sendAll(ctx context.Context) error {
	for {
		var completed int
		if err := d.pool.QueryRow(ctx, `SELECT CASE WHEN count(*) > 0 THEN herald.complete(array_agg(c.id), array_agg(c.lease_token)) ELSE 0 END
			FROM herald.claim_batch('bench', 1000) AS c`).Scan(&completed); err != nil {
			return err
		}
		if completed == 0 {
			break
		}
	}
	for {
		var moved int
		if err := d.pool.QueryRow(ctx, `SELECT herald.log_sequence()`).Scan(&moved); err != nil {
			return err
		}
		if moved == 0 {
			break
		}
	}
	_, err := d.pool.Exec(ctx, `VACUUM ANALYZE herald.messages, herald.log_statements`)
	return err
}
