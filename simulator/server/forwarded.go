package server

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ParseTrustedProxies reads a comma-separated list of addresses and
// prefixes (10.0.0.0/8, 192.0.2.7, ::1): the reverse proxies and load
// balancers whose Forwarded or X-Forwarded-For header is believed
// (gwsim serve and gwsim proxy --trusted-proxies).
func ParseTrustedProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("--trusted-proxies: %q is neither an address nor a prefix such as 10.0.0.0/8", s)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func trusted(a netip.Addr, list []netip.Prefix) bool {
	a = a.Unmap()
	for _, p := range list {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientFrom is the address a request's client is counted by: the peer
// of the connection; when the peer is one of the trusted proxies, the
// nearest address of the Forwarded header's for= list (else of
// X-Forwarded-For), read from the right, that is not itself a trusted
// proxy. A header from a peer that is not trusted is never read: anyone
// can write one. IPv6 clients are counted by their /64.
func clientFrom(r *http.Request, list []netip.Prefix) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	ip := ap.Addr().Unmap()
	if len(list) > 0 && trusted(ip, list) {
		hops := forwardedFor(r.Header)
		for i := len(hops) - 1; i >= 0; i-- {
			ip = hops[i]
			if !trusted(ip, list) {
				break
			}
		}
	}
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			ip = p.Addr()
		}
	}
	return ip
}

// forwardedFor is the client addresses a request passed through, first
// the farthest: Forwarded's for= (RFC 7239) when the request has one,
// else X-Forwarded-For. A hop that is no address (unknown, an obfuscated
// name) ends the list there: what is left of it cannot be placed.
func forwardedFor(h http.Header) []netip.Addr {
	var words []string
	if fw := h.Values("Forwarded"); len(fw) > 0 {
		for _, v := range fw {
			for _, elem := range strings.Split(v, ",") {
				for _, pair := range strings.Split(elem, ";") {
					k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
					if ok && strings.EqualFold(k, "for") {
						words = append(words, strings.Trim(val, `"`))
					}
				}
			}
		}
	} else {
		for _, v := range h.Values("X-Forwarded-For") {
			words = append(words, strings.Split(v, ",")...)
		}
	}
	var out []netip.Addr
	for _, w := range words {
		w = strings.TrimSpace(w)
		a, err := netip.ParseAddr(strings.Trim(w, "[]"))
		if err != nil {
			if ap, perr := netip.ParseAddrPort(w); perr == nil {
				a, err = ap.Addr(), nil
			}
		}
		if err != nil {
			out = out[:0] // the hops left of an unplaceable one are not believed
			continue
		}
		out = append(out, a.Unmap())
	}
	return out
}
