package intake

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
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
	fmt.Fprint(slow, "POST /v1/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"chan")
	open, _ := h.bounded("")
	for deadline := time.Now().Add(10 * time.Second); open.inFlight.Load() != 1; {
		if time.Now().After(deadline) {
			t.Fatal("the slow request was never admitted")
		}
		time.Sleep(time.Millisecond) // polling a counter: no signal to wait on
	}
	if n := len(open.conns); n != 0 {
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

// countingReader counts what is read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Attack: a gzip bomb, a body small as sent that expands to 100 MB. It is refused 413
// once what it expands to passes the limit, and no more of it is read or expanded:
// what the handler took from the request is a small part of what was sent.
func TestAGzipBombIsNotExpandedPastTheLimit(t *testing.T) {
	pool, err := pgxpool.New(t.Context(), "postgres://nobody@127.0.0.1:1/none") // never dialled
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	h := newHandler(pool, Config{MaxBodyBytes: 128 << 10})
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(bytes.Repeat([]byte(" "), 100<<20))
	zw.Close()
	sent := int64(buf.Len())
	body := &countingReader{r: &buf}
	req := httptest.NewRequest("POST", "/v1/messages", body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	w := httptest.NewRecorder()
	if _, ok := h.body(w, req); ok || w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a gzip bomb: %d %s, want 413", w.Code, w.Body)
	}
	if body.n > sent/10 {
		t.Fatalf("%d of the bomb's %d bytes were read: it was expanded past the limit", body.n, sent)
	}
}
