package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// QueueChannel is the NOTIFY channel herald's triggers use to wake runners.
const QueueChannel = "herald_queue"

// listen holds one connection (Config.ListenURL, or one taken out of the pool) that
// LISTENs on QueueChannel and turns notifications into wake-ups. After each LISTEN it
// checks that notifications arrive (checkListening): through a transaction pooler
// they do not, and the runner then says so and claims every DeafPollInterval. After
// any error it reconnects with backoff, LISTENs again and asks for a claim at once
// (notifications sent while it was away are lost; the claim catches up).
func (r *Runner) listen(ctx context.Context) {
	b := newBackoff(100*time.Millisecond, 5*time.Second)
	for ctx.Err() == nil {
		conn, err := r.listenConn(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("listener cannot connect; retrying", "err", err)
				sleep(ctx, b.next())
			}
			continue
		}
		b.reset()
		r.setListener(true)
		r.log.Info("listening", "channel", QueueChannel)
		r.wakeUp()
		if err = r.checkListening(ctx, conn); err == nil {
			for {
				if _, err = conn.WaitForNotification(ctx); err != nil {
					break
				}
				if r.deaf.Swap(false) {
					r.log.Info("notifications arrive again")
				}
				r.m.notifications.Inc()
				r.wakeUp()
			}
		}
		r.setListener(false)
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn.Close(closeCtx)
		cancel()
		if ctx.Err() == nil {
			r.log.Warn("listener lost its connection; reconnecting", "err", err)
			sleep(ctx, b.next())
		}
	}
}

// listenCheckTimeout is how long checkListening waits for its own notification.
const listenCheckTimeout = 2 * time.Second

// checkListening sends a notification through the pool and waits for it on conn.
// When it does not arrive, LISTEN is deaf (a transaction pooler such as PgBouncer
// hands the LISTEN to a server connection that then serves others): logged as an
// error with the fix, shown by /healthz, and the claim loop polls every
// DeafPollInterval. An error is returned only when conn failed.
func (r *Runner) checkListening(ctx context.Context, conn *pgx.Conn) error {
	token := fmt.Sprintf("herald-listen-check-%d-%d", os.Getpid(), rand.Int64())
	if _, err := r.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, QueueChannel, token); err != nil {
		return nil // the pool's trouble, not the listener's; the claim loop reports it
	}
	wctx, cancel := context.WithTimeout(ctx, listenCheckTimeout)
	defer cancel()
	for {
		n, err := conn.WaitForNotification(wctx)
		if err == nil {
			if n.Payload == token {
				r.deaf.Store(false)
				return nil
			}
			r.m.notifications.Inc()
			r.wakeUp()
			continue
		}
		if ctx.Err() != nil || !pgconn.Timeout(err) {
			return err
		}
		r.deaf.Store(true)
		r.log.Error("LISTEN receives no notifications: a transaction pooler (PgBouncer) between herald and PostgreSQL? "+
			"Give the listener a direct connection with HERALD_LISTEN_URL. Claiming every "+r.cfg.DeafPollInterval.String()+" meanwhile",
			"channel", QueueChannel)
		return nil
	}
}

// listenConn opens the listener's connection (Config.ListenURL, or one hijacked
// from the pool) and LISTENs on it.
func (r *Runner) listenConn(ctx context.Context) (*pgx.Conn, error) {
	var conn *pgx.Conn
	if r.cfg.ListenURL != "" {
		var err error
		if conn, err = pgx.Connect(ctx, r.cfg.ListenURL); err != nil {
			return nil, err
		}
	} else {
		c, err := r.pool.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		conn = c.Hijack()
	}
	if _, err := conn.Exec(ctx, "LISTEN "+QueueChannel); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

func (r *Runner) setListener(up bool) {
	r.listenerUp.Store(up)
	v := 0.0
	if up {
		v = 1
	}
	r.m.listenerUp.Set(v)
}

// wakeUp asks the claim loop for a claim; wake-ups that arrive while one is pending
// fold into it.
func (r *Runner) wakeUp() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}
