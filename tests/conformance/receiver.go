package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/herald/herald/runner/sender/webhook"
)

// receiver is the webhook provider the suite controls. The path of a message's URL
// says how it answers:
//
//	/ok          204 with X-Request-Id rcpt-msg_<herald id>
//	/fail-once   503 the first time for a message, then as /ok
//	/lost-once   the first time, the request read whole and the connection closed
//	             with no answer (a provider that took it and crashed), then as /ok
//	/busy        429 with Retry-After: 2 the first time, then as /ok
//	/gone        410
//	/slow?ms=N   as /ok after N milliseconds
//	/hold        as /ok once the suite releases it
//	/order       as /ok after 50 ms, noting how many of these run at once
//	/callback    as /ok, noting the status callback's event and message id
//
// A request whose signature does not verify gets 401, one whose webhook-id is not
// the message's (webhook.ID under the installation's key) 400; neither is counted
// as an arrival. Arrivals are kept by "msg_<herald id>".
type receiver struct {
	srv               *http.Server
	base              string
	secret            string
	idKey             []byte // the installation's key, which makes webhook-ids
	mu                sync.Mutex
	seen              map[string][]time.Time // webhook-id -> arrivals
	order             []string               // webhook-ids of /order, in arrival order
	orderIn, orderMax int
	holding           chan struct{}
	held              chan struct{} // closed when a /hold request arrived
	done              int           // answers written
	bad               int           // requests that failed verification
	perEndpoint       bool          // verify with each URL's own secret (webhook.EndpointSecret)
	callbacks         []string      // status callbacks to /callback: "<event> <message id>", in arrival order
}

func newReceiver(secret string, idKey []byte) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{secret: secret, idKey: idKey, base: "http://localhost:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}
	r.reset()
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *receiver) close() { r.srv.Close() }

func (r *receiver) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen, r.order, r.orderIn, r.orderMax, r.done, r.bad = map[string][]time.Time{}, nil, 0, 0, 0, 0
	r.callbacks = nil
	r.perEndpoint = false
	r.holding, r.held = make(chan struct{}), make(chan struct{})
}

// release lets /hold requests answer.
func (r *receiver) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.holding:
	default:
		close(r.holding)
	}
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	secret := r.secret
	r.mu.Lock()
	if r.perEndpoint {
		secret, _ = webhook.EndpointSecret(r.secret, r.base+req.URL.Path)
	}
	r.mu.Unlock()
	if webhook.Verify([]string{secret}, req.Header, body, time.Minute, time.Now()) != nil {
		r.mu.Lock()
		r.bad++
		r.mu.Unlock()
		w.WriteHeader(401)
		return
	}
	var msg struct {
		ID int64 `json:"id"`
	}
	if json.Unmarshal(body, &msg) != nil || req.Header.Get(webhook.HeaderID) != webhook.ID(msg.ID, r.idKey) {
		r.mu.Lock()
		r.bad++
		r.mu.Unlock()
		w.WriteHeader(400)
		return
	}
	id := fmt.Sprintf("msg_%d", msg.ID)
	r.mu.Lock()
	r.seen[id] = append(r.seen[id], time.Now())
	first := len(r.seen[id]) == 1
	holding, held := r.holding, r.held
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.done++
		r.mu.Unlock()
	}()
	switch strings.TrimPrefix(req.URL.Path, "/") {
	case "fail-once":
		if first {
			w.WriteHeader(503)
			return
		}
	case "lost-once":
		if first {
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
			}
			return
		}
	case "busy":
		if first {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(429)
			return
		}
	case "gone":
		w.WriteHeader(410)
		return
	case "slow":
		ms, _ := strconv.Atoi(req.URL.Query().Get("ms"))
		time.Sleep(time.Duration(ms) * time.Millisecond)
	case "hold":
		r.mu.Lock()
		select {
		case <-held:
		default:
			close(held)
		}
		r.mu.Unlock()
		<-holding
	case "callback":
		var cb struct {
			Payload struct {
				Event   string `json:"event"`
				Message struct {
					ID int64 `json:"message_id"`
				} `json:"message"`
			} `json:"payload"`
		}
		if json.Unmarshal(body, &cb) != nil {
			w.WriteHeader(400)
			return
		}
		r.mu.Lock()
		r.callbacks = append(r.callbacks, fmt.Sprintf("%s %d", cb.Payload.Event, cb.Payload.Message.ID))
		r.mu.Unlock()
	case "order":
		r.mu.Lock()
		r.order = append(r.order, id)
		r.orderIn++
		r.orderMax = max(r.orderMax, r.orderIn)
		r.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
		r.mu.Lock()
		r.orderIn--
		r.mu.Unlock()
	}
	w.Header().Set("X-Request-Id", "rcpt-"+id)
	w.WriteHeader(204)
}

// arrivals returns a copy of what arrived, by webhook-id.
func (r *receiver) arrivals() map[string][]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]time.Time, len(r.seen))
	for k, v := range r.seen {
		out[k] = append([]time.Time(nil), v...)
	}
	return out
}

// answers counts the answers written so far.
func (r *receiver) answers() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done
}
