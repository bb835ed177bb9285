"""herald's reference runner in Python: docs/runner-contract.md as a worked example.

It delivers one channel's messages as Standard Webhooks POSTs to each message's URL,
with psycopg 3 and the standard library only:

    DATABASE_URL=postgres://… HERALD_CHANNEL=hooks HERALD_WEBHOOK_SECRETS=whsec_… \
        python3 examples/python/runner.py

Settings: HERALD_CHANNEL (hooks), HERALD_WEBHOOK_SECRETS (space-separated whsec_
secrets), HERALD_WEBHOOK_PER_ENDPOINT (true: sign with each URL's own secret, derived
from the channel's as docs/operations.md says), HERALD_WEBHOOK_ALLOW (CIDRs it may
reach although internal), HERALD_WEBHOOK_USER_AGENT (herald-webhooks/1), HERALD_CONCURRENCY
(8), HERALD_LEASE_SECONDS (30), HERALD_POLL_SECONDS (1), HERALD_GRACE_SECONDS (10).
Its role needs herald_worker. SIGTERM: finish sends in flight, report, exit 0.
Unlike `herald run`, it checks a webhook's addresses before connecting, not on the
socket being opened (a DNS answer that changes in between gets through).
"""

import base64, hashlib, hmac, ipaddress, json, os, select, signal, socket, sys, threading, time
import http.client, urllib.error, urllib.parse, urllib.request
from concurrent.futures import ThreadPoolExecutor
from email.utils import parsedate_to_datetime

import psycopg

ENV = os.environ
CHANNEL = ENV.get("HERALD_CHANNEL", "hooks")
SECRETS = ENV.get("HERALD_WEBHOOK_SECRETS", "").split()
KEYS = [base64.b64decode(s.removeprefix("whsec_")) for s in SECRETS if s.startswith("whsec_")]
PER_ENDPOINT = ENV.get("HERALD_WEBHOOK_PER_ENDPOINT", "false") == "true"
ALLOW = [ipaddress.ip_network(c) for c in ENV.get("HERALD_WEBHOOK_ALLOW", "").replace(",", " ").split()]
CONCURRENCY = int(ENV.get("HERALD_CONCURRENCY", "8"))
LEASE = float(ENV.get("HERALD_LEASE_SECONDS", "30"))
POLL = float(ENV.get("HERALD_POLL_SECONDS", "1"))
GRACE = float(ENV.get("HERALD_GRACE_SECONDS", "10"))
WORKER = f"py-{socket.gethostname()}-{os.getpid()}"
USER_AGENT = ENV.get("HERALD_WEBHOOK_USER_AGENT", "herald-webhooks/1")  # not Python-urllib's, which firewalls block


def connect():
    return psycopg.connect(ENV["DATABASE_URL"], autocommit=True)  # autocommit: never a transaction during a send


class Failure(Exception):
    def __init__(self, cls, code, text, retry_in=None):
        super().__init__(text)
        self.cls, self.code, self.retry_in = cls, code, retry_in


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):  # a 3xx is a failure, never followed
        return None


OPENER = urllib.request.build_opener(NoRedirects, urllib.request.ProxyHandler({}))


def check_egress(url):
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname or u.username or u.password:
        raise Failure("permanent", "egress_refused", "not an http(s) URL without user info")
    for *_, addr in socket.getaddrinfo(u.hostname, u.port or (443 if u.scheme == "https" else 80)):
        ip = ipaddress.ip_address(addr[0])
        ip = ip.ipv4_mapped or ip if ip.version == 6 else ip
        internal = ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_reserved or ip.is_unspecified
        if internal and not any(ip in net for net in ALLOW):
            raise Failure("permanent", "egress_refused", f"{ip} is internal (allow it with HERALD_WEBHOOK_ALLOW)")


def retry_after(headers, default):
    v = headers.get("Retry-After", "")
    if v.isdigit():
        return float(v)
    try:
        return max(0.0, parsedate_to_datetime(v).timestamp() - time.time())
    except (TypeError, ValueError):
        return default


def webhook_id(message_id, key):
    """msg_<id>_<tag>: the tag an HMAC-SHA256 of "herald-webhook-id:<id>" under the
    installation's key (herald.message_id_keys), its first 10 bytes in lower-case base32."""
    tag = hmac.new(key, f"herald-webhook-id:{message_id}".encode(), hashlib.sha256).digest()[:10]
    return f"msg_{message_id}_" + base64.b32encode(tag).decode().lower()


def send(m, id_key):
    """POST one message; returns the receipt, or raises Failure (docs/operations.md's classes)."""
    check_egress(m["recipient"])
    body = json.dumps({k: m[k] for k in ("id", "channel", "recipient", "payload", "metadata", "attempt")}).encode()
    wid, ts = webhook_id(m["id"], id_key), str(int(time.time()))
    keys = KEYS
    if PER_ENDPOINT:  # each receiver URL's own key: HMAC-SHA256(channel key, "herald-endpoint:" + URL)
        keys = [hmac.new(k, ("herald-endpoint:" + m["recipient"]).encode(), hashlib.sha256).digest() for k in KEYS]
    sigs = " ".join("v1," + base64.b64encode(hmac.new(k, f"{wid}.{ts}.".encode() + body, hashlib.sha256).digest()).decode() for k in keys)
    req = urllib.request.Request(m["recipient"], data=body, method="POST", headers={
        "Content-Type": "application/json", "User-Agent": USER_AGENT,
        "webhook-id": wid, "webhook-timestamp": ts, "webhook-signature": sigs})
    try:
        with OPENER.open(req, timeout=30) as resp:
            return resp.headers.get("X-Request-Id") or None
    except urllib.error.HTTPError as e:
        s, text = e.code, f"HTTP {e.code}: {e.read(500).decode(errors='replace')}"
        if s == 429:
            raise Failure("rate_limited", "429", text, retry_after(e.headers, 60))
        if s in (401, 403):  # this receiver refused: its configuration, not the channel's
            raise Failure("transient", str(s), text, retry_after(e.headers, None))
        if s >= 500 or s == 408:
            raise Failure("transient", str(s), text, retry_after(e.headers, None))
        raise Failure("permanent", "redirect" if 300 <= s < 400 else str(s), text)
    except urllib.error.URLError as e:  # before the request went out whole: nobody has it
        raise Failure("transient", None, f"connection: {e.reason}")
    except (http.client.HTTPException, OSError) as e:  # after: the receiver may have taken it
        raise Failure("transient", "in_doubt", f"no answer after the request: {e!r}")


class Runner:
    def __init__(self):
        self.claims, self.reports, self.listener = connect(), connect(), None
        self.id_key = bytes(self.claims.execute(  # the newest key makes webhook-ids; read once
            "SELECT key FROM herald.message_id_keys ORDER BY created_at DESC, key LIMIT 1").fetchone()[0])
        self.lock = threading.Lock()
        self.flights = {}  # id -> (row, lease deadline on our clock)
        self.wake_r, self.wake_w = os.pipe()  # a finished send wakes the claim loop
        self.pool = ThreadPoolExecutor(CONCURRENCY)
        self.stop = threading.Event()

    def claim(self, n):
        start = time.monotonic()  # the lease began after this: start + LEASE is never late
        rows = self.claims.execute(
            "SELECT id, channel, recipient, payload, metadata, attempt, lease_token,"
            " extract(epoch FROM expires_at - lease_expires_at)::float8 FROM herald.claim_batch("
            "%s, %s, make_interval(secs => %s), ARRAY[%s])", (WORKER, n, LEASE, CHANNEL)).fetchall()
        for r in rows:
            m = dict(zip(("id", "channel", "recipient", "payload", "metadata", "attempt", "lease_token"), r[:7]))
            # expires_at on our clock: the database claimed at lease_expires_at - LEASE, after start
            m["expires"] = start + LEASE + r[7]
            with self.lock:
                self.flights[m["id"]] = (m, start + LEASE)
            self.pool.submit(self.deliver, m)
        return len(rows)

    def deliver(self, m):
        with self.lock:
            deadline = self.flights[m["id"]][1]
        if deadline - time.monotonic() < LEASE / 6:  # the lease lapsed while it waited: not ours to send
            self.report(m, None, Failure("rate_limited", "lease_lapsed", "lease lapsed before the send", 0))
            return
        if time.monotonic() >= m["expires"]:  # never sent late: herald.fail ends it expired
            self.report(m, None, Failure("rate_limited", "expired", "expired before the send", 0))
            return
        try:
            self.report(m, send(m, self.id_key), None)
        except Failure as f:
            self.report(m, None, f)
        except Exception as e:  # a bug is transient: try again
            self.report(m, None, Failure("transient", None, f"runner error: {e!r}"))

    def report(self, m, receipt, f):
        ids, tokens = [m["id"]], [m["lease_token"]]
        with self.lock:  # one connection for reports; a production runner batches them
            if f is None:
                n = self.reports.execute("SELECT herald.complete(%s::bigint[], %s::bigint[], %s::text[])",
                                         (ids, tokens, [receipt])).fetchone()[0]
            else:
                at = None if f.retry_in is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + f.retry_in))
                n = self.reports.execute(
                    "SELECT herald.fail(%s::bigint[], %s::bigint[], %s::text[], %s::text[], %s::timestamptz[], %s::text[])",
                    (ids, tokens, [str(f)[:2000]], [f.cls], [at], [f.code])).fetchone()[0]
            if n < len(ids):
                print(f"lease lost for {ids}: possible duplicate delivery", file=sys.stderr)
            self.flights.pop(m["id"], None)
        os.write(self.wake_w, b".")

    def extend_leases(self):
        conn = connect()
        while not self.stop.wait(LEASE / 6):
            now = time.monotonic()
            with self.lock:
                due = [(m["id"], m["lease_token"]) for m, d in self.flights.values() if d - now < LEASE / 2]
            if due:
                n = conn.execute("SELECT herald.extend_lease(%s::bigint[], %s::bigint[], make_interval(secs => %s))",
                                 ([i for i, _ in due], [t for _, t in due], LEASE)).fetchone()[0]
                if n == len(due):
                    with self.lock:
                        for i, _ in due:
                            if i in self.flights:
                                self.flights[i] = (self.flights[i][0], now + LEASE)

    def listen(self):
        """(Re)connect the LISTEN connection; after a reconnect, claim at once."""
        try:
            self.listener = connect()
            self.listener.execute("LISTEN herald_queue")
        except psycopg.Error as e:
            print(f"listener: {e}; polling meanwhile", file=sys.stderr)
            self.listener = None

    def run(self):
        threading.Thread(target=self.extend_leases, daemon=True).start()
        next_maintenance, trailing = 0.0, None
        while not self.stop.is_set():
            if self.listener is None:
                self.listen()
            if time.monotonic() >= next_maintenance:  # duties: reap crashed runners' leases, sequence the log, call back
                self.claims.execute("SELECT herald.reap_stale()")
                self.claims.execute("SELECT herald.log_sequence()")
                while self.claims.execute("SELECT events FROM herald.dispatch_callbacks(1000)").fetchone()[0] == 1000:
                    pass
                next_maintenance = time.monotonic() + POLL
            free = CONCURRENCY - len(self.flights)
            if free > 0 and self.claim(free) == free:
                continue  # a full claim: there is probably more
            timeout = POLL if trailing is None else max(0.0, trailing - time.monotonic())
            fds = [self.wake_r] + ([self.listener.fileno()] if self.listener else [])
            ready, _, _ = select.select(fds, [], [], timeout)
            trailing = None
            if self.wake_r in ready:
                os.read(self.wake_r, 4096)
            if self.listener and self.listener.fileno() in ready:
                try:
                    self.listener.pgconn.consume_input()
                    while self.listener.pgconn.notifies() is not None:
                        trailing = time.monotonic() + 0.01  # claim now, and once more shortly after
                except psycopg.Error:  # the session is gone: notifications sent meanwhile are lost
                    self.listener.close()
                    self.listener = None
        deadline = time.monotonic() + GRACE  # in-flight sends finish and report, for GRACE at most
        while self.flights and time.monotonic() < deadline:
            time.sleep(0.05)
        with self.lock:
            left = list(self.flights.values())
        for m, _ in left:  # started, never returned: maybe delivered, so it counts as an attempt
            self.report(m, None, Failure("transient", "released", "send cut short at shutdown", 0))
        self.pool.shutdown(wait=False, cancel_futures=True)
        os._exit(0)  # do not wait for a stuck send's thread


def main():
    if not KEYS or len(KEYS) != len(SECRETS):
        print("runner.py: set HERALD_WEBHOOK_SECRETS to whsec_ secrets (this runner signs v1 only, not whsk_ keys' v1a)",
              file=sys.stderr)
        return 2
    r = Runner()
    signal.signal(signal.SIGTERM, lambda *_: r.stop.set())
    signal.signal(signal.SIGINT, lambda *_: r.stop.set())
    r.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
