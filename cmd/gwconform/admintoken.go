package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"

	"github.com/gwdmi/gwtools/conformance/load"
)

// adminToken is gwsim's admin token as the user gave it: on the command
// line (--admin-token), or from $GWSIM_ADMIN_TOKEN.
type adminToken struct {
	value   string
	fromEnv bool
}

// adminTokenOf is the token of --admin-token, else of the environment.
func adminTokenOf(flagValue, env string) adminToken {
	if flagValue != "" {
		return adminToken{value: flagValue}
	}
	return adminToken{value: env, fromEnv: env != ""}
}

// to decides whether the token is sent to dest, and says once on w where
// it goes (never the token). A token given on the command line goes where
// the command line sends it. One from $GWSIM_ADMIN_TOKEN, which a shell
// may hold for a local gwsim, goes only to a loopback address or to a URL
// the user named (named: --observer), never by default to a target
// nobody vetted.
func (t adminToken) to(dest string, named bool, w io.Writer, prog string) string {
	if t.value == "" || dest == "" {
		return ""
	}
	shown := load.RedactURL(dest)
	if t.fromEnv && !named && !onLoopback(dest) {
		fmt.Fprintf(w, "%s: $GWSIM_ADMIN_TOKEN is not sent to %s, which is not on loopback (give --observer URL or --admin-token to send a token there)\n", prog, shown)
		return ""
	}
	from := "--admin-token"
	if t.fromEnv {
		from = "$GWSIM_ADMIN_TOKEN"
	}
	fmt.Fprintf(w, "%s: the admin token (%s) is sent to %s\n", prog, from, shown)
	return t.value
}

// onLoopback says whether a URL's host is a loopback address or
// localhost, as written: a name is not resolved (it could resolve
// anywhere later).
func onLoopback(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := strings.ToLower(u.Hostname())
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
