package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// otherAddress listens on an address of this machine that is not loopback
// (skipping when it has none) and serves h there.
func otherAddress(t *testing.T, h http.Handler) string {
	t.Helper()
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.To4() == nil {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(n.IP.String(), "0"))
		if err != nil {
			continue
		}
		srv := &http.Server{Handler: h}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return "http://" + ln.Addr().String()
	}
	t.Skip("this machine has no address but loopback")
	return ""
}

// gwsimCmd runs the gwsim binary with env added (and $GWSIM_URL and
// $GWSIM_ADMIN_TOKEN cleared first).
func gwsimCmd(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(simtest.Binary(t, "gwsim"), args...)
	cmd.Env = append(os.Environ(), append([]string{"GWSIM_URL=", "GWSIM_ADMIN_TOKEN="}, env...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Run()
	return cmd.ProcessState.ExitCode(), o.String(), e.String()
}

// TestClientsTokenRule: gwsim clients sends $GWSIM_ADMIN_TOKEN to a
// $GWSIM_URL beyond loopback never, and says so once; a --target named on
// the command line, or --admin-token, gets it, said once, never printed.
// A password in the target URL is printed nowhere.
func TestClientsTokenRule(t *testing.T) {
	const token = "env-admin-token-0123456789abcdef0123456789"
	var got atomic.Int64
	target := otherAddress(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Authorization"), token) {
			got.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"clients":[]}`)
	}))
	env := []string{"GWSIM_ADMIN_TOKEN=" + token}
	code, out, errOut := gwsimCmd(t, append(env, "GWSIM_URL="+target), "clients")
	if got.Load() != 0 || code != 0 || strings.Count(errOut, "$GWSIM_ADMIN_TOKEN is not sent to "+target) != 1 {
		t.Errorf("$GWSIM_URL=%s: token sent %d times, exit %d\n%s%s", target, got.Load(), code, out, errOut)
	}
	code, out, errOut = gwsimCmd(t, env, "clients", "--target", target)
	if got.Load() != 1 || code != 0 || strings.Count(errOut, "the admin token ($GWSIM_ADMIN_TOKEN) is sent to "+target) != 1 {
		t.Errorf("--target %s: token sent %d times, exit %d\n%s%s", target, got.Load(), code, out, errOut)
	}
	withPassword := strings.Replace(target, "http://", "http://operator:hunter2-pass@", 1)
	code, out, errOut = gwsimCmd(t, nil, "clients", "--target", withPassword, "--admin-token", token)
	if got.Load() != 2 || code != 0 || !strings.Contains(errOut, "the admin token (--admin-token) is sent to "+target) {
		t.Errorf("--admin-token: token sent %d times, exit %d\n%s%s", got.Load(), code, out, errOut)
	}
	for _, s := range []string{token, "hunter2-pass", "operator"} {
		if strings.Contains(out+errOut, s) {
			t.Errorf("gwsim clients printed %q:\n%s%s", s, out, errOut)
		}
	}
}

// TestClientsEscapesAHostileTarget: whatever a target answers to
// GET /_sim/clients (an error with escape sequences in its body, JSON that
// is not a report), gwsim clients' error line shows it escaped.
func TestClientsEscapesAHostileTarget(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
	}{{500, "boom " + hostileBytes}, {200, `{"clients": "` + hostileBytes + `"}`}, {200, hostileBytes}} {
		srv := loopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			io.WriteString(w, tc.body)
		}))
		code, out, errOut := gwsimCmd(t, nil, "clients", "--target", srv)
		if code != 2 {
			t.Errorf("%d %q: exit %d", tc.status, tc.body, code)
		}
		for _, c := range []string{"\x1b", "\x07", "\r", "\u009b"} {
			if strings.Contains(out+errOut, c) {
				t.Errorf("%d %q: gwsim clients passes %q to the terminal:\n%q", tc.status, tc.body, c, out+errOut)
			}
		}
	}
}

func loopbackServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}
