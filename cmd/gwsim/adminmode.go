package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"
)

// The values of gwsim serve --admin.
const (
	adminAuto = "auto"
	adminOpen = "open"
	adminOff  = "off"
)

// checkAdminMode settles m.AdminMode from --admin or $GWSIM_ADMIN and
// refuses, before anything listens, an admin API open to the network that
// nobody asked for: without a token, --addr must be on loopback unless
// --admin says open or off.
func (m *Main) checkAdminMode(getenv func(string) string) error {
	from := "--admin"
	if m.AdminMode == "" {
		m.AdminMode, from = getenv("GWSIM_ADMIN"), "GWSIM_ADMIN"
	}
	switch m.AdminMode {
	case "":
		m.AdminMode = adminAuto
	case adminAuto:
	case adminOpen, adminOff:
		if m.AdminToken != "" {
			return fmt.Errorf("%s %s and an admin token: %s needs no token; leave one out", from, m.AdminMode, m.AdminMode)
		}
	default:
		return fmt.Errorf("%s: %q is not auto, open or off", from, m.AdminMode)
	}
	if m.AdminMode == adminAuto && m.AdminToken == "" && !loopbackOnly(m.Addr) {
		return fmt.Errorf("%s", closedAdmin(m.Addr))
	}
	return nil
}

// closedAdmin is the one line that refuses an admin API open to the
// network, and says the three ways on.
func closedAdmin(addr string) string {
	return closedAdminLine(addr) + ", or --admin off to serve without it"
}

// closedAdminLine is closedAdmin without --admin off (gwsim proxy has no
// such mode).
func closedAdminLine(addr string) string {
	return fmt.Sprintf("--addr %s is not on loopback and no admin token is set: give one in $GWSIM_ADMIN_TOKEN or "+
		"--admin-token-file FILE (openssl rand -hex 16), or say --admin open to open the admin API to the network on purpose", addr)
}

// loopbackOnly says whether a listen address is on loopback only: an IP
// of 127.0.0.0/8 or ::1, or a name whose every address is one (resolved,
// localhost and *.localhost included, since the resolver may answer
// anything for them). No host, 0.0.0.0 and :: listen on every interface.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
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

// closedInRecipe applies gwsim serve's admin rule to a command line of a
// recipe (args after "serve") run in the environment env that the recipe
// gives it: a token named there (by value or reference) counts as given,
// and --admin-token-file's file is taken as holding one. It returns the
// error gwsim would stop with; TestRecipesKeepTheAdminAPIClosed calls it
// on every recipe and doc.
func closedInRecipe(args []string, env map[string]string) error {
	m := &Main{Stdout: io.Discard, Stderr: io.Discard, checkOnly: true}
	if err := m.ParseFlags(args); err != nil {
		return err
	}
	if m.AdminTokenFile != "" {
		m.AdminToken = "(in " + m.AdminTokenFile + ")"
	}
	if v, ok := env["GWSIM_ADMIN_TOKEN"]; ok && m.AdminToken == "" {
		m.AdminToken = "(" + v + ")"
	}
	return m.checkAdminMode(func(name string) string { return env[name] })
}
