package runner

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// QueueChannel is the NOTIFY channel herald's triggers use to wake runners.
const QueueChannel = "herald_queue"

// listen holds one connection, taken out of the pool, that LISTENs on QueueChannel
// and turns notifications into wake-ups. After any error it reconnects with backoff,
// LISTENs again and asks for a claim at once (notifications sent while it was away
// are lost; the claim catches up).
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
		for {
			if _, err = conn.WaitForNotification(ctx); err != nil {
				break
			}
			r.m.notifications.Inc()
			r.wakeUp()
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

// listenConn hijacks a connection from the pool and LISTENs on it.
func (r *Runner) listenConn(ctx context.Context) (*pgx.Conn, error) {
	c, err := r.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	conn := c.Hijack()
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
