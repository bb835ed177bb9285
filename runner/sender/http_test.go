package sender

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
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

// A request sent whole and never answered is in doubt (the provider may be acting on
// it); one that found no server is not; an answer, whatever it says, is no error.
func TestDoTellsARequestSentWholeFromOneNeverSent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/lost" {
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	client := ProviderClient(5*time.Second, nil)
	for _, c := range []struct {
		url   string
		doubt bool
	}{{srv.URL + "/lost", true}, {closed + "/none", false}} {
		req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(`{"to":"ana@example.net"}`))
		_, err := Do(client, req)
		f := Classify(FromNetwork(err))
		if err == nil || InDoubt(err) != c.doubt || (f.Code == "in_doubt") != c.doubt || f.Class != ClassTransient {
			t.Errorf("%s: %v, in doubt %v, code %q; want in doubt %v", c.url, err, InDoubt(err), f.Code, c.doubt)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/answered", strings.NewReader(`{}`))
	if resp, err := Do(client, req); err != nil || resp.StatusCode != 500 {
		t.Fatalf("an answer: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// The proxy the environment names answers a provider's CONNECT: a refusal (403) or a
// demand for credentials (407) is the channel's configuration (code proxy), naming
// the host; the proxy failing to reach the provider (502, 504) is the provider not
// answering, as an outage is; and the request never left, so neither is in doubt.
func TestAProxysRefusalIsConfiguration(t *testing.T) {
	for _, c := range []struct {
		status int
		class  Class
		code   string
	}{
		{http.StatusForbidden, ClassConfiguration, "proxy"},
		{http.StatusProxyAuthRequired, ClassConfiguration, "proxy"},
		{http.StatusBadGateway, ClassTransient, ""},
		{http.StatusGatewayTimeout, ClassTransient, ""},
	} {
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(c.status)
		}))
		client := ProviderClient(5*time.Second, nil)
		proxyURL, _ := url.Parse(proxy.URL)
		client.Transport.(*http.Transport).Proxy = http.ProxyURL(proxyURL) // as HTTPS_PROXY would
		req, _ := http.NewRequest("POST", "https://api.provider.example/v1/send", strings.NewReader("{}"))
		_, err := Do(client, req)
		f := Classify(FromNetwork(err))
		if f.Class != c.class || f.Code != c.code || (c.class == ClassTransient && !f.Unavailable) || InDoubt(err) ||
			!strings.Contains(err.Error(), "api.provider.example") {
			t.Errorf("proxy answering %d: %s %q (unavailable %v, in doubt %v): %v", c.status, f.Class, f.Code, f.Unavailable, InDoubt(err), err)
		}
		proxy.Close()
	}
}
