package sender

import (
	"net/http"
	"testing"
	"time"
)

// A 429's wait is read from the provider's headers as they are written on the wire,
// and a receiver's header cannot set it beyond a year (a count of seconds too large
// for a Go duration wrapped into an arbitrary time, possibly past: a retry at once,
// the attempt given back) nor before now.
func TestRetryHeadersAreReadAndBounded(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	year := now.Add(maxRetryAfter)
	for _, c := range []struct {
		name, value string
		want        time.Time
	}{
		{"Retry-After", "30", now.Add(30 * time.Second)},
		{"Retry-After", "0", now},
		{"Retry-After", "Wed, 02 Jan 2030 03:05:00 GMT", now.Add(55 * time.Second)},
		{"X-RateLimit-Reset", "1893553565", now.Add(2 * time.Minute)},
		{"Retry-After", "1000000000000000", year},
		{"Retry-After", "99999999999999999999999", year},
		{"Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT", year},
		{"X-RateLimit-Reset", "99999999999999", year},
		{"Retry-After", "-5", now.Add(time.Minute)},      // unusable: the default
		{"Retry-After", "soon", now.Add(time.Minute)},    // unusable: the default
		{"X-RateLimit-Reset", "1", now.Add(time.Minute)}, // past: the default
	} {
		h := http.Header{}
		h.Set(c.name, c.value)
		f := Classify(FromHTTP(http.StatusTooManyRequests, h, "slow down", now))
		if !f.RetryAt.Equal(c.want) {
			t.Errorf("%s: %s: retry at %v, want %v", c.name, c.value, f.RetryAt, c.want)
		}
	}
}
