package runner

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// instruments are the runner's Prometheus metrics, registered with the Go runtime
// and process collectors in the runner's own registry (docs/operations.md, "Metrics").
type instruments struct {
	reg           *prometheus.Registry
	claimed       *prometheus.CounterVec
	sent          *prometheus.CounterVec
	failed        *prometheus.CounterVec
	held          *prometheus.CounterVec
	events        *prometheus.CounterVec
	intake        *prometheus.CounterVec
	duplicates    prometheus.Counter
	inDoubt       *prometheus.CounterVec
	released      prometheus.Counter
	leaseExtended prometheus.Counter
	leaseLost     prometheus.Counter
	leaseLapsed   prometheus.Counter
	expiredUnsent prometheus.Counter
	reaped        prometheus.Counter
	callbacks     prometheus.Counter
	setAside      prometheus.Counter
	notifications prometheus.Counter
	listenerUp    prometheus.Gauge
	inflight      prometheus.Gauge
	concurrency   prometheus.Gauge
	receiverConc  prometheus.Gauge
	atMaxPending  prometheus.Gauge
	suspended     prometheus.Gauge
	codeMatches   prometheus.Gauge
	queueDepth    *prometheus.GaugeVec
	logLag        *prometheus.GaugeVec
	paused        *prometheus.GaugeVec
	quiet         *prometheus.GaugeVec
	sendSeconds   *prometheus.HistogramVec
	claimSeconds  prometheus.Histogram
}

var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// deliveryEvents registers herald_delivery_events_received_total in reg: what the
// delivery-event endpoints of this process recorded, in herald run and herald serve.
func deliveryEvents(reg *prometheus.Registry) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_delivery_events_received_total",
		Help: "Providers' delivery events this process's endpoints recorded (replays and unmatched ones too), by source and event."},
		[]string{"source", "event"})
	reg.MustRegister(c)
	return c
}

// intakeRequests registers herald_intake_requests_total in reg: the HTTP intake's
// answers by token, status and error code, in herald run and herald serve.
func intakeRequests(reg *prometheus.Registry) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_intake_requests_total",
		Help: "Requests the HTTP intake answered, by token name (empty: open intake or no valid token), HTTP status and error code (none: a success)."},
		[]string{"token", "status", "code"})
	reg.MustRegister(c)
	return c
}

// countIntake adds one answer of the intake to c.
func countIntake(c *prometheus.CounterVec, token string, status int, code string) {
	if code == "" {
		code = "none"
	}
	c.WithLabelValues(token, strconv.Itoa(status), code).Inc()
}

func newInstruments() *instruments {
	reg := prometheus.NewRegistry()
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		f(c)
		return c
	}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		f(c)
		return c
	}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		f(g)
		return g
	}
	m := &instruments{
		reg:     reg,
		claimed: counterVec("herald_claimed_total", "Messages claimed by this runner.", "channel"),
		sent:    counterVec("herald_sent_total", "Messages delivered and completed.", "channel"),
		failed:  counterVec("herald_failed_total", "Failed deliveries reported to herald.fail, by class.", "channel", "class"),
		held: counterVec("herald_held_total", "Sends held back, not tried (the attempt given back), by reason: "+
			"circuit_open (the receiver host keeps failing), host_busy (its sends in flight at the bound), provider_down (the channel's provider not answering).",
			"channel", "reason"),
		events:     deliveryEvents(reg),
		intake:     intakeRequests(reg),
		duplicates: counter("herald_duplicates_total", "Reports that matched no row: the lease was lost, so the message may be delivered twice."),
		inDoubt: counterVec("herald_in_doubt_total", "Sends that failed after the whole request was sent (no answer, a timeout, a reset): "+
			"the provider may have taken the message, so the retry may deliver it twice.", "channel"),
		released:      counter("herald_released_total", "Messages given back unsent at shutdown."),
		leaseExtended: counter("herald_lease_extended_total", "Leases extended for slow sends."),
		leaseLost:     counter("herald_lease_lost_total", "Lease extensions refused: the lease had already been lost."),
		leaseLapsed:   counter("herald_lease_lapsed_unsent_total", "Messages not sent because their lease lapsed while they waited."),
		expiredUnsent: counter("herald_expired_unsent_total", "Claimed messages not sent because they expired while they waited."),
		reaped:        counter("herald_reaped_total", "Expired leases taken back by this runner's reap_stale calls."),
		callbacks:     counter("herald_callbacks_total", "Status callbacks this runner's herald.dispatch_callbacks calls enqueued."),
		setAside: counter("herald_callbacks_set_aside_total",
			"Log events whose callback was refused (the producer's callback channel changed), set aside in herald.consumer_dead_letters."),
		notifications: counter("herald_notifications_total", "NOTIFY herald_queue received."),
		listenerUp:    gauge("herald_listener_connected", "1 while the LISTEN connection is up."),
		inflight:      gauge("herald_inflight_messages", "Messages claimed and not yet reported."),
		concurrency:   gauge("herald_concurrency_limit", "Sends to providers this runner lets run at once now (adaptive unless fixed)."),
		receiverConc:  gauge("herald_receiver_concurrency_limit", "Sends to webhook receivers this runner lets run at once now (ramping up to HERALD_CONCURRENCY unless fixed)."),
		atMaxPending: gauge("herald_producers_at_max_pending",
			"Producers whose enqueues are refused: at their max_pending when this runner last counted (herald.count_producers)."),
		suspended: gauge("herald_producers_suspended",
			"Producers suspended for their bounce or complaint rate when this runner last counted (herald.count_producers)."),
		codeMatches: gauge("herald_sql_code_matches",
			"1 while the database's herald SQL code (herald.installed_code) is the one this runner was built with, or cannot be told (installed by hand, no Config.CodeHash); 0 while it is another build's."),
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_queue_depth_messages",
			Help: "Messages queued and due, scheduled, held and processing per channel, sampled from herald.queue_depth."}, []string{"channel", "status"}),
		logLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_log_consumer_lag_offsets",
			Help: "Offsets between a consumer group's furthest-behind partition and the end of the ordered log, sampled from herald.consumer_lag."}, []string{"group"}),
		paused: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_channel_paused",
			Help: "1 while the channel is paused in herald.channels (read every probe interval)."}, []string{"channel"}),
		quiet: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_channel_quiet",
			Help: "1 while the channel is in its quiet hours or days, sampled from herald.quiet_channels() with the queue depth."}, []string{"channel"}),
		sendSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "herald_send_duration_seconds",
			Help: "Time a sender took per message.", Buckets: latencyBuckets}, []string{"channel"}),
		claimSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "herald_claim_duration_seconds",
			Help: "Time a claim_batch call took.", Buckets: latencyBuckets}),
	}
	m.codeMatches.Set(1) // until a sample says otherwise (none without Config.CodeHash)
	f(m.queueDepth)
	f(m.logLag)
	f(m.paused)
	f(m.quiet)
	f(m.sendSeconds)
	f(m.claimSeconds)
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
