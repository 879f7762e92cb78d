// Package tokenrule is the one rule every command follows before it sends
// gwsim's admin token anywhere. A token given on the command line goes
// where the command line sends it. One from $GWSIM_ADMIN_TOKEN, which a
// shell may hold for a local gwsim, goes only to a loopback host (a name
// is resolved, and every address it has must be loopback) or to a URL the
// user named on the command line; never to a URL read from a file (a
// report, an explore file, a bundle) or from the environment. Each command
// says once where the token goes, never the token.
package tokenrule

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/printable"
)

// Token is an admin token as the user gave it.
type Token struct {
	Value string
	// FromEnv: the token came from $GWSIM_ADMIN_TOKEN, not the command
	// line.
	FromEnv bool
}

// Of is the token of a command-line flag when set, else of the
// environment's value.
func Of(flagValue, env string) Token {
	if flagValue != "" {
		return Token{Value: flagValue}
	}
	return Token{Value: env, FromEnv: env != ""}
}

// Where a destination URL came from.
const (
	// Named: the user wrote the URL on the command line.
	Named = true
	// NotNamed: the URL came from a default, the environment or a file.
	NotNamed = false
)

// To returns the token to send to dest ("" when it must not go there) and
// says once on w, as prog, where it goes or why not; hint says how to send
// it there on purpose ("give --observer URL or --admin-token").
func (t Token) To(dest string, named bool, w io.Writer, prog, hint string) string {
	if t.Value == "" || dest == "" {
		return ""
	}
	shown := printable.String(Redact(dest))
	if t.FromEnv && !named && !OnLoopback(dest) {
		fmt.Fprintf(w, "%s: $GWSIM_ADMIN_TOKEN is not sent to %s, which is not on loopback and was not named on the command line (%s)\n", prog, shown, hint)
		return ""
	}
	from := "--admin-token"
	if t.FromEnv {
		from = "$GWSIM_ADMIN_TOKEN"
	}
	fmt.Fprintf(w, "%s: the admin token (%s) is sent to %s\n", prog, from, shown)
	return t.Value
}

// OnLoopback says whether a URL's host is on loopback: an address of
// 127.0.0.0/8 or ::1, or a name (localhost and *.localhost included, which
// a resolver may answer otherwise) whose every address is one.
func OnLoopback(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	return HostOnLoopback(u.Hostname())
}

// Resolve looks a name up; tests replace it.
var Resolve = func(ctx context.Context, host string) ([]net.IPAddr, error) {
	return net.DefaultResolver.LookupIPAddr(ctx, host)
}

// HostOnLoopback is OnLoopback for a bare host name or address.
func HostOnLoopback(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := Resolve(ctx, host)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return false
		}
	}
	return true
}

// Redact is a URL without its user information (a password in a URL is
// never printed or stored; not even the user name is kept) nor its query
// and fragment, which may carry a key.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	u.User = nil
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	return u.String()
}
