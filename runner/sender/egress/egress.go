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
// herald._refused_address in SQL refuses literal addresses of the same networks at
// enqueue; a test keeps the two lists equal.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
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
// names. The zero Policy refuses every Refused network.
type Policy struct {
	// Allow lists networks ("10.1.0.0/16") and host names ("hooks.internal") that are
	// reachable although they fall in a refused network.
	Allow []string
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

// Check validates the allow-list: each entry a CIDR, an address or a host name.
func (p Policy) Check() error {
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

// DialContext returns a dial function for http.Transport that enforces p on the
// address each connection actually goes to. A host on the allow-list by name is
// dialled without the check (the operator vouched for the name).
func (p Policy) DialContext(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
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
