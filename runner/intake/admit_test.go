package intake

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Attack: a client sends its body slowly (or never finishes it). The request counts
// against its token's in-flight bound while the body is read, but holds none of the
// token's database slots, so the token's next request goes straight through.
func TestASlowBodyHoldsNoDatabaseSlot(t *testing.T) {
	pool, err := pgxpool.New(t.Context(), "postgres://nobody@127.0.0.1:1/none") // never dialled
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	h := newHandler(pool, Config{MaxInFlight: 4, TokenConns: 1})
	srv := httptest.NewServer(h.auth(func(w http.ResponseWriter, r *http.Request, c caller) {
		fmt.Fprintf(w, "%d bytes", len(c.body))
	}))
	defer srv.Close()
	slow, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprint(slow, "POST /v1/messages HTTP/1.1\r\nHost: herald\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"chan")
	for deadline := time.Now().Add(10 * time.Second); h.bounds[""].inFlight.Load() != 1; {
		if time.Now().After(deadline) {
			t.Fatal("the slow request was never admitted")
		}
		time.Sleep(time.Millisecond) // polling a counter: no signal to wait on
	}
	if n := len(h.bounds[""].conns); n != 0 {
		t.Fatalf("a request still reading its body holds %d database slots, want 0", n)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatalf("the next request waited behind the slow one: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the next request: %d", resp.StatusCode)
	}
}
