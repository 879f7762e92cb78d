package main

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// nonLoopbackIP is an address of this machine that is not loopback, or ""
// when it has none.
func nonLoopbackIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// vendor is a target reached by an address that is not loopback, in front
// of a simulator: it counts the requests that carry token.
func vendor(t *testing.T, upstream, token string) (string, *atomic.Int64) {
	t.Helper()
	ip := nonLoopbackIP()
	if ip == "" {
		t.Skip("this machine has no address but loopback")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	u, _ := url.Parse(upstream)
	rp := httputil.NewSingleHostReverseProxy(u)
	var got atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, v := range r.Header.Values("Authorization") {
			if strings.Contains(v, token) {
				got.Add(1)
			}
		}
		rp.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), &got
}

// TestEnvironmentTokenStaysOffUntrustedTargets: with $GWSIM_ADMIN_TOKEN
// exported (as for a local gwsim), gwconform run against a target that is
// not on loopback, gwconform load check-acks of such a target, and explore
// and diff with such a target, send the token nowhere and say so; named
// with --observer, the same URL gets it, and the console says where it
// went; a loopback target gets it. The token is never printed.
func TestEnvironmentTokenStaysOffUntrustedTargets(t *testing.T) {
	const token = "env-admin-token-0123456789abcdef0123456789"
	sim := startSim(t, fleet.Demo())
	target, got := vendor(t, sim.URL(), token)
	env := []string{"GWSIM_ADMIN_TOKEN=" + token}
	one := []string{"--check", "probe.device_id-alias.json", "--allow-partial"}

	r := runGwconform(t, bins.gwconform, env, append([]string{"--target", target}, one...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "$GWSIM_ADMIN_TOKEN is not sent to "+target) {
		t.Errorf("run --target %s: exit %d\n%s\n%s", target, r.code, tail(r.stdout), r.stderr)
	}
	if n := got.Load(); n != 0 {
		t.Errorf("the target not on loopback was sent the environment's token %d times", n)
	}
	r = runGwconform(t, bins.gwconform, env, append([]string{"--target", target, "--observer", target}, one...)...)
	if r.code != 0 || got.Load() == 0 || strings.Count(r.stdout, "the admin token ($GWSIM_ADMIN_TOKEN) is sent to "+target) != 1 {
		t.Errorf("run --observer %s: exit %d, token sent %d times\n%s\n%s", target, r.code, got.Load(), tail(r.stdout), r.stderr)
	}
	for _, out := range []string{r.stdout, r.stderr} {
		if strings.Contains(out, token) {
			t.Error("the token was printed")
		}
	}

	// check-acks reads the state through the target's admin API.
	dir := t.TempDir()
	ackLog := filepath.Join(dir, "acks.jsonl")
	if r := runCommand(t, nil, "load", "--target", sim.URL(), "--requests", "4", "--ack-log", ackLog, "--quiet"); r.code != 0 {
		t.Fatalf("load: exit %d\n%s", r.code, r.stderr)
	}
	got.Store(0)
	r = runCommand(t, env, "load", "check-acks", ackLog, "--target", target)
	if got.Load() != 0 || !strings.Contains(r.stderr, "$GWSIM_ADMIN_TOKEN is not sent to "+target) {
		t.Errorf("check-acks --target %s: token sent %d times, exit %d\n%s%s", target, got.Load(), r.code, r.stdout, r.stderr)
	}
	r = runCommand(t, env, "load", "check-acks", ackLog, "--target", sim.URL())
	if r.code != 0 || !strings.Contains(r.stderr, "the admin token ($GWSIM_ADMIN_TOKEN) is sent to "+sim.URL()) || strings.Contains(r.stdout+r.stderr, token) {
		t.Errorf("check-acks --target %s (loopback): exit %d\n%s%s", sim.URL(), r.code, r.stdout, r.stderr)
	}
	// explore and diff reset their targets through the admin API: a token
	// from the environment goes to none that is not on loopback.
	got.Store(0)
	r = runCommand(t, env, "explore", "--target", target, "--operations", "5", "--report-dir", t.TempDir())
	if got.Load() != 0 || !strings.Contains(r.stderr, "$GWSIM_ADMIN_TOKEN is not sent to "+target) {
		t.Errorf("explore --target %s: token sent %d times, exit %d\n%s", target, got.Load(), r.code, r.stderr)
	}
	r = runCommand(t, env, "diff", "--target", target, "--target", sim.URL(), "--operations", "5", "--report-dir", t.TempDir())
	if got.Load() != 0 || !strings.Contains(r.stderr, "$GWSIM_ADMIN_TOKEN is not sent to "+target) {
		t.Errorf("diff --target %s: token sent %d times, exit %d\n%s", target, got.Load(), r.code, r.stderr)
	}
	// A token on the command line goes where the command line says.
	got.Store(0)
	runCommand(t, nil, "load", "check-acks", ackLog, "--target", target, "--admin-token", token)
	if got.Load() == 0 {
		t.Error("check-acks --admin-token: the token given on the command line was not sent to --target")
	}
}

// runCommand runs gwconform with args and env added to the environment.
func runCommand(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bins.gwconform, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}
