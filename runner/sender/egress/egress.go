// Package egress decides where the runner may connect on a producer's behalf. A
// webhook's URL is chosen by whoever enqueued it, so by default the runner refuses
// to connect to the networks a request from outside must never reach: loopback,
// private (RFC 1918), carrier-grade NAT, link-local (cloud metadata at
// 169.254.169.254 and fd00:ec2::254), unique-local, unspecified, multicast,
// broadcast and reserved ranges, and IPv6 forms that carry an IPv4 address inside
// (IPv4-mapped and -compatible, NAT64, Teredo, 6to4).
//
// The check runs at connect time on the address actually dialled (net.Dialer's
// Control hook), for every address a name resolves to, so a DNS answer that changes
// between a check and the connection cannot get past it. IPv4-mapped IPv6 addresses
// are checked as the IPv4 address they are. An operator who runs receivers inside
// the network allows them explicitly: networks (CIDR) or host names.
//
// Or every connection goes through an egress proxy the operator runs (Stripe's
// Smokescreen, a Squid with an ACL): the runner then dials the proxy alone and the
// proxy decides where a connection may go (Policy.Proxy, ProxyError).
//
// herald._refused_address in SQL refuses literal addresses of the same networks at
// enqueue; a test keeps the two lists equal.
package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Network is one refused range and why it is refused.
type Network struct {
	Prefix netip.Prefix
	Reason string
}

// Refused lists the networks the runner does not connect to unless allowed.
var Refused = []Network{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved or broadcast"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("::ffff:0:0/96"), "IPv4-mapped"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("fc00::/7"), "unique-local"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// Policy is where connections may go: anywhere but Refused, except what Allow
// names; or, with a Proxy, wherever that proxy lets them. The zero Policy refuses
// every Refused network.
type Policy struct {
	// Allow lists networks ("10.1.0.0/16") and host names ("hooks.internal") that are
	// reachable although they fall in a refused network.
	Allow []string
	// Proxy is an HTTP proxy (http:// or https://, user info sent as Basic
	// Proxy-Authorization) that every connection goes through: https URLs by CONNECT,
	// http URLs as proxied requests. It is the only address dialled, unchecked (the
	// operator chose it), and the check of where a connection goes is the proxy's; an
	// Allow list beside it is refused (allow those receivers in the proxy).
	Proxy *url.URL
	// ProxyTLS is the TLS of an https Proxy, apart from the receivers': the CAs its
	// certificate must chain to (nil RootCAs: the system's) and the client
	// certificate shown to it and to no receiver (Smokescreen names a client by its
	// certificate's CommonName); nil: the system's CAs, no certificate. Only with an
	// https Proxy.
	ProxyTLS *tls.Config
}

// ErrRefused is wrapped by every refusal.
var ErrRefused = errors.New("egress refused")

// Reason returns why addr is refused, or "" when it may be dialled.
func (p Policy) Reason(addr netip.Addr) string {
	addr = addr.Unmap()
	for _, a := range p.Allow {
		if pre, err := netip.ParsePrefix(a); err == nil && pre.Contains(addr) {
			return ""
		}
		if one, err := netip.ParseAddr(a); err == nil && one.Unmap() == addr {
			return ""
		}
	}
	for _, n := range Refused {
		if n.Prefix.Contains(addr) {
			return n.Reason
		}
	}
	return ""
}

// allowsHost reports whether host (a name, not an address) is on the allow-list.
func (p Policy) allowsHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, a := range p.Allow {
		if strings.TrimSuffix(strings.ToLower(a), ".") == host {
			return true
		}
	}
	return false
}

// Check validates the allow-list (each entry a CIDR, an address or a host name) and
// the proxy (an http or https URL of a host, nothing after it; no allow-list beside it).
func (p Policy) Check() error {
	if u := p.Proxy; u != nil {
		switch {
		case len(p.Allow) > 0:
			return errors.New("egress: an allow-list does nothing beside a proxy, which decides where connections go: allow those receivers in the proxy")
		case p.ProxyTLS != nil && u.Scheme != "https":
			return fmt.Errorf("egress proxy: a CA or client certificate for the proxy needs an https proxy, not %s", u.Redacted())
		case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.Hostname() == "", u.Opaque != "",
			u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "":
			return fmt.Errorf("egress proxy: %s is not http(s)://host[:port]", u.Redacted())
		}
	} else if p.ProxyTLS != nil {
		return errors.New("egress: a CA or client certificate for the proxy needs a proxy")
	}
	for _, a := range p.Allow {
		if _, err := netip.ParsePrefix(a); err == nil {
			continue
		}
		if _, err := netip.ParseAddr(a); err == nil {
			continue
		}
		if a == "" || strings.ContainsAny(a, "/ :@") {
			return fmt.Errorf("egress allow-list: %q is not a network, an address or a host name", a)
		}
	}
	return nil
}

// Transport makes t obey p: with a proxy, every request goes through it and t dials
// nothing else (ProxyError for its refusals); without, t dials through DialContext.
// An https proxy's TLS is DialContext's (ProxyTLS), t's TLSClientConfig the
// receivers' alone. Proxy settings from the environment are never read.
func (p Policy) Transport(t *http.Transport, timeout time.Duration) {
	t.Proxy = nil
	t.DialContext = p.DialContext(timeout)
	if p.Proxy == nil {
		return
	}
	u := *p.Proxy
	if u.Scheme == "https" { // t speaks plain HTTP to the proxy inside DialContext's TLS
		u.Scheme, u.Host = "http", proxyAddr(p.Proxy)
	}
	t.Proxy = http.ProxyURL(&u)
	t.OnProxyConnectResponse = ConnectAnswer
}

// ConnectAnswer reads a proxy's answer res to the CONNECT req (an
// http.Transport's OnProxyConnectResponse): nil when it connected, else its
// ProxyError.
func ConnectAnswer(_ context.Context, _ *url.URL, req *http.Request, res *http.Response) error {
	if res.StatusCode == http.StatusOK {
		return nil
	}
	return proxyError(req.Host, res)
}

// ProxyError is an egress proxy's answer other than a connection to Host: a refusal
// of where it goes (Refused: 403, or 407 without a Proxy-Authenticate, as Smokescreen
// denies), a demand for credentials (Credentials: 407 with one), a rate limit (429),
// or that it could not reach Host (Unreachable: 502, 504).
type ProxyError struct {
	Host        string
	Status      int
	Reason      string // the proxy's X-Smokescreen-Error, or its status text
	Refused     bool
	Credentials bool
	Unreachable bool
	Header      http.Header // the answer's headers (Retry-After)
}

// Error says what the proxy answered for which host; a refusal reads as ErrRefused.
func (e *ProxyError) Error() string {
	switch {
	case e.Refused:
		return fmt.Sprintf("%s: the egress proxy refused %s (%d): %s", ErrRefused, e.Host, e.Status, e.Reason)
	case e.Credentials:
		return fmt.Sprintf("the egress proxy wants credentials (%d): give the proxy's URL its user and password", e.Status)
	}
	return fmt.Sprintf("the egress proxy answered %d for %s: %s", e.Status, e.Host, e.Reason)
}

// Unwrap makes a refusal ErrRefused.
func (e *ProxyError) Unwrap() error {
	if e.Refused {
		return ErrRefused
	}
	return nil
}

// ProxyAnswer is the ProxyError res carries when it is the proxy's own answer to a
// proxied request for an http URL of host (a 407: an origin server has no reason to
// send one), or nil.
func ProxyAnswer(host string, res *http.Response) *ProxyError {
	if res.StatusCode != http.StatusProxyAuthRequired {
		return nil
	}
	return proxyError(host, res)
}

// proxyError reads the proxy's answer res for host: its status, and its reason from
// Smokescreen's X-Smokescreen-Error header (at most 300 bytes) or the status text.
func proxyError(host string, res *http.Response) *ProxyError {
	reason := strings.TrimSpace(res.Header.Get("X-Smokescreen-Error"))
	if reason == "" {
		reason = http.StatusText(res.StatusCode)
	}
	if len(reason) > 300 {
		reason = reason[:300]
	}
	e := &ProxyError{Host: host, Status: res.StatusCode, Reason: reason, Header: res.Header}
	switch res.StatusCode {
	case http.StatusForbidden:
		e.Refused = true
	case http.StatusProxyAuthRequired:
		e.Credentials = res.Header.Get("Proxy-Authenticate") != ""
		e.Refused = !e.Credentials
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		e.Unreachable = true
	}
	return e
}

// DialContext returns a dial function for http.Transport that enforces p on the
// address each connection actually goes to. A host on the allow-list by name is
// dialled without the check (the operator vouched for the name). With a proxy it
// dials the proxy's address and refuses any other.
func (p Policy) DialContext(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if p.Proxy != nil {
		open := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
		want := proxyAddr(p.Proxy)
		var proxyTLS *tls.Config
		if p.Proxy.Scheme == "https" {
			proxyTLS = &tls.Config{MinVersion: tls.VersionTLS12}
			if p.ProxyTLS != nil {
				proxyTLS = p.ProxyTLS.Clone()
			}
			proxyTLS.ServerName = p.Proxy.Hostname()
		}
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			if !strings.EqualFold(addr, want) {
				return nil, fmt.Errorf("%w: %s is not the egress proxy", ErrRefused, addr)
			}
			conn, err := open.DialContext(ctx, network, addr)
			if err != nil || proxyTLS == nil {
				return conn, err
			}
			tc := tls.Client(conn, proxyTLS)
			hctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if err := tc.HandshakeContext(hctx); err != nil { // the transport wraps it as a proxyconnect error
				conn.Close()
				return nil, err
			}
			return tc, nil
		}
	}
	checked := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: cannot read the address %q", ErrRefused, address)
			}
			if why := p.Reason(ap.Addr()); why != "" {
				return fmt.Errorf("%w: %s is %s (allow it with HERALD_WEBHOOK_ALLOW)", ErrRefused, ap.Addr().Unmap(), why)
			}
			return nil
		}}
	open := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err == nil && p.allowsHost(host) {
			return open.DialContext(ctx, network, addr)
		}
		return checked.DialContext(ctx, network, addr)
	}
}

// proxyAddr is the host:port a transport dials for proxy u.
func proxyAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return net.JoinHostPort(u.Hostname(), port)
}
