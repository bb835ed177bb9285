package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/herald/herald/runner/sender/webhook"
)

// sign: what a webhook's signature costs the runner, per request, on one core.
// herald = an Ed25519 "v1a" signature (a whsk_ key); baseline = an HMAC-SHA256 "v1"
// signature (a whsec_ secret); both over the same 1 KiB body, o.duration each,
// alternating for o.rounds. Rates are signatures per second.
func sign(_ context.Context, _ *database, o options) ([]row, error) {
	body := make([]byte, 1024)
	seed := make([]byte, ed25519.SeedSize)
	hmacKey := make([]byte, 32)
	rand.Read(body)
	rand.Read(seed)
	rand.Read(hmacKey)
	priv := ed25519.NewKeyFromSeed(seed)
	rate := func(f func(i int)) float64 {
		n, t0 := 0, time.Now()
		for time.Since(t0) < o.duration {
			for range 100 {
				f(n)
				n++
			}
		}
		return float64(n) / time.Since(t0).Seconds()
	}
	h, b := result{name: "v1a (Ed25519)"}, result{name: "v1 (HMAC-SHA256)"}
	for round := range o.rounds {
		h.rates = append(h.rates, rate(func(i int) { webhook.SignAsymmetric(priv, "msg_1", int64(i), body) }))
		b.rates = append(b.rates, rate(func(i int) { webhook.Sign(hmacKey, "msg_1", int64(i), body) }))
		fmt.Printf("  sign round %d: v1a %.0f/s, v1 %.0f/s\n", round+1, h.rates[round], b.rates[round])
	}
	return []row{ratioRow("sign: v1a (Ed25519) vs v1 (HMAC-SHA256) webhook signatures, 1 KiB body, one core", "signatures/s", h, b, 0)}, nil
}
