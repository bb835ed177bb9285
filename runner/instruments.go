package runner

import "github.com/herald/herald/runner/internal/metrics"

// instruments are the runner's Prometheus metrics.
type instruments struct {
	reg           *metrics.Registry
	claimed       metrics.Counter
	sent          metrics.Counter
	failed        metrics.Counter
	duplicates    metrics.Counter
	released      metrics.Counter
	leaseExtended metrics.Counter
	leaseLost     metrics.Counter
	leaseLapsed   metrics.Counter
	reaped        metrics.Counter
	notifications metrics.Counter
	listenerUp    metrics.Gauge
	inflight      metrics.Gauge
	queueDepth    metrics.Gauge
	sendSeconds   metrics.Histogram
	claimSeconds  metrics.Histogram
}

var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

func newInstruments() *instruments {
	r := &metrics.Registry{}
	return &instruments{
		reg:           r,
		claimed:       r.Counter("herald_claimed_total", "Messages claimed by this runner.", "channel"),
		sent:          r.Counter("herald_sent_total", "Messages delivered and completed.", "channel"),
		failed:        r.Counter("herald_failed_total", "Failed deliveries reported to herald.fail, by class.", "channel", "class"),
		duplicates:    r.Counter("herald_duplicates_total", "Reports that matched no row: the lease was lost, so the message may be delivered twice."),
		released:      r.Counter("herald_released_total", "Messages given back unsent at shutdown."),
		leaseExtended: r.Counter("herald_lease_extended_total", "Leases extended for slow sends."),
		leaseLost:     r.Counter("herald_lease_lost_total", "Lease extensions refused: the lease had already been lost."),
		leaseLapsed:   r.Counter("herald_lease_lapsed_unsent_total", "Messages not sent because their lease lapsed while they waited."),
		reaped:        r.Counter("herald_reaped_total", "Expired leases taken back by this runner's reap_stale calls."),
		notifications: r.Counter("herald_notifications_total", "NOTIFY herald_queue received."),
		listenerUp:    r.Gauge("herald_listener_connected", "1 while the LISTEN connection is up."),
		inflight:      r.Gauge("herald_inflight", "Messages claimed and not yet reported."),
		queueDepth:    r.Gauge("herald_queue_depth", "Messages queued and processing per channel, sampled from herald.queue_depth.", "channel", "status"),
		sendSeconds:   r.Histogram("herald_send_seconds", "Time a sender took per message.", latencyBuckets, "channel"),
		claimSeconds:  r.Histogram("herald_claim_seconds", "Time a claim_batch call took.", latencyBuckets),
	}
}
