package runner

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/herald/herald/runner/sender"
)

// Config is how a Runner works. Zero values take the defaults below.
type Config struct {
	// Worker names this runner in leased_by (default: hostname-pid).
	Worker string
	// Senders maps a channel to its Sender; channels without one are not served.
	Senders map[string]sender.Sender
	// BatchSize is the most messages one claim_batch call takes (default 100), and
	// the most results one complete/fail call reports.
	BatchSize int
	// Concurrency is the most sends to providers that run at once (default 512), and
	// apart from those the most to receivers (senders that are sender.ToReceivers:
	// webhooks, each receiver site bounded by the sender), so that slow receivers
	// never take the providers' slots. Unless FixedConcurrency is set, the runner
	// adapts its limit on provider sends below it to the provider: from
	// ConcurrencyStart it grows while latency holds and the provider does not push
	// back, and shrinks on 429s, timeouts and rising latency (runner/adaptive.go). A
	// claim never takes more messages than there are free send slots, nor more than
	// BatchSize.
	Concurrency int
	// ConcurrencyStart is the adaptive limit's first value (default 16).
	ConcurrencyStart int
	// FixedConcurrency keeps the limit at Concurrency.
	FixedConcurrency bool
	// Lease is the lease asked of claim_batch (default 30s). A send still running
	// when half of it is left gets it extended.
	Lease time.Duration
	// PollInterval is how often the runner claims without a notification, and calls
	// herald.log_sequence and herald.refresh_statistics (default 1s).
	PollInterval time.Duration
	// ShutdownGrace is how long in-flight sends may finish after a stop (default 10s);
	// what is still unsent then is released (rate_limited, retry now; docs/runner-contract.md).
	ShutdownGrace time.Duration
	// ReapInterval is how often one runner (an advisory lock decides which) calls
	// herald.reap_stale (default 5s).
	ReapInterval time.Duration
	// FlushInterval is the longest a result waits before it is reported (default 5ms).
	FlushInterval time.Duration
	// StatsInterval is how often herald.queue_depth and herald.consumer_lag are
	// sampled for the queue-depth and log-lag metrics (default 15s; the first reads
	// the queued and processing rows).
	StatsInterval time.Duration
	// NotifyWindow is how long after a notification the runner claims once more, for
	// a message committed while the first claim ran, whose producer saw no runner
	// waiting (default 10ms; docs/sql.md, "Notifications").
	NotifyWindow time.Duration
	// ListenURL is where the listener connects for LISTEN, when that must not be a
	// connection of the pool: behind a transaction pooler (PgBouncer) LISTEN only
	// works on a direct connection. Empty: a connection taken from the pool.
	ListenURL string
	// DeafPollInterval is how often the runner claims while its LISTEN connection
	// receives no notifications (checked after each LISTEN; default 250ms).
	DeafPollInterval time.Duration
	// StartCheck is what Run does when a sender's check (sender.Checker) finds the
	// configuration wrong before the first claim: StartCheckPause (default),
	// StartCheckRefuse or StartCheckOff.
	StartCheck string
	// Ready, when set, is called once the start check has passed, just before the
	// first claim: a service manager's readiness (systemd's READY=1).
	Ready func()
	// CheckTimeout bounds one sender check (default 15s).
	CheckTimeout time.Duration
	// ProbeInterval is how often the paused state of the runner's channels is read
	// (the herald_channel_paused gauge) and a channel a runner paused is probed
	// (default 1m).
	ProbeInterval time.Duration
	// QuotaInterval is how often herald.count_producers counts the unfinished messages
	// of the producers with a max_pending (default 10s; one runner at a time counts).
	QuotaInterval time.Duration
	// OutageFailures is how many transient failures in a row of a channel's provider
	// (5xx, timeouts, no connection; not a webhook receiver's) mean the provider is
	// down: from then on its failures give the attempt back (rate_limited, code
	// provider_down) and the channel pauses for OutageWait, so an outage does not
	// dead-letter the backlog (default 10; below 0: never).
	OutageFailures int
	// OutageWait is how long a channel whose provider is down pauses before the probe
	// tries it (default 1m).
	OutageWait time.Duration
	// CodeHash is the hash of the SQL code this runner was built with (herald's
	// sql.CodeHash); the runner compares it with herald.installed_code every
	// StatsInterval (the herald_sql_code_matches gauge, and a warning when they
	// differ). Empty: not compared.
	CodeHash string
	// Tracer, when set, makes a span of every send ("deliver <channel>"), a child of
	// the trace context in the message's metadata, and hands it to the sender in the
	// send's context (OpenTelemetry). nil: no spans.
	Tracer trace.Tracer
	// Logger receives structured logs (default: slog.Default()).
	Logger *slog.Logger
}

// Defaults of Config, printed by `herald run --help`.
const (
	DefaultBatchSize    = 100
	DefaultConcurrency  = 512
	DefaultLease        = 30 * time.Second
	DefaultPollInterval = time.Second
	// DefaultDeafPollInterval is Config.DeafPollInterval's default.
	DefaultDeafPollInterval = 250 * time.Millisecond
	DefaultShutdownGrace    = 10 * time.Second
	DefaultReapInterval     = 5 * time.Second
	DefaultFlushInterval    = 5 * time.Millisecond
	DefaultStatsInterval    = 15 * time.Second
	DefaultNotifyWindow     = 10 * time.Millisecond
	DefaultCheckTimeout     = 15 * time.Second
	// DefaultConcurrencyStart is Config.ConcurrencyStart's default.
	DefaultConcurrencyStart = 16
	DefaultProbeInterval    = time.Minute
	// DefaultQuotaInterval is Config.QuotaInterval's default.
	DefaultQuotaInterval = 10 * time.Second
	// DefaultOutageFailures and DefaultOutageWait are Config.OutageFailures' and
	// Config.OutageWait's defaults.
	DefaultOutageFailures = 10
	DefaultOutageWait     = time.Minute
)

func (c *Config) setDefaults() error {
	if c.Worker == "" {
		host, _ := os.Hostname()
		c.Worker = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if len(c.Senders) == 0 {
		return errors.New("runner: no channel has a sender")
	}
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.ConcurrencyStart == 0 {
		c.ConcurrencyStart = min(DefaultConcurrencyStart, c.Concurrency)
	}
	set(&c.Lease, DefaultLease)
	set(&c.PollInterval, DefaultPollInterval)
	set(&c.DeafPollInterval, DefaultDeafPollInterval)
	set(&c.ShutdownGrace, DefaultShutdownGrace)
	set(&c.ReapInterval, DefaultReapInterval)
	set(&c.FlushInterval, DefaultFlushInterval)
	set(&c.StatsInterval, DefaultStatsInterval)
	set(&c.NotifyWindow, DefaultNotifyWindow)
	set(&c.CheckTimeout, DefaultCheckTimeout)
	set(&c.ProbeInterval, DefaultProbeInterval)
	set(&c.QuotaInterval, DefaultQuotaInterval)
	set(&c.OutageWait, DefaultOutageWait)
	if c.OutageFailures == 0 {
		c.OutageFailures = DefaultOutageFailures
	}
	if c.StartCheck == "" {
		c.StartCheck = StartCheckPause
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	switch {
	case c.BatchSize < 1 || c.BatchSize > 10000:
		return fmt.Errorf("runner: batch size %d is outside 1..10000", c.BatchSize)
	case c.Concurrency < 1:
		return fmt.Errorf("runner: concurrency %d must be at least 1", c.Concurrency)
	case c.ConcurrencyStart < 1 || c.ConcurrencyStart > c.Concurrency:
		return fmt.Errorf("runner: concurrency start %d is outside 1..%d (the maximum)", c.ConcurrencyStart, c.Concurrency)
	case c.Lease < time.Second || c.Lease > 24*time.Hour:
		return fmt.Errorf("runner: lease %s is outside 1s..24h", c.Lease)
	case c.StartCheck != StartCheckPause && c.StartCheck != StartCheckRefuse && c.StartCheck != StartCheckOff:
		return fmt.Errorf("runner: start check %q: want pause, refuse or off", c.StartCheck)
	case c.PollInterval < 0 || c.DeafPollInterval < 0 || c.ShutdownGrace < 0 || c.ReapInterval < 0 || c.FlushInterval < 0 ||
		c.StatsInterval < 0 || c.QuotaInterval < 0:
		return errors.New("runner: intervals must not be negative")
	}
	return nil
}

// channels returns the served channels, sorted.
func (c *Config) channels() []string {
	var out []string
	for ch := range c.Senders {
		out = append(out, ch)
	}
	sort.Strings(out)
	return out
}
