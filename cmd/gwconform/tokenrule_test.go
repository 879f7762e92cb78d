package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gwdmi/gwtools/conformance/explore"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
)

// TestReplayNeverSendsTheTokenToAFilesObserver: gwconform replay of an
// explore.json whose observer (written in the file) is not on loopback
// sends $GWSIM_ADMIN_TOKEN nowhere there, and says so once; the same
// observer named with --observer on the command line gets it. Real
// process, real file, a real listener on a non-loopback address.
func TestReplayNeverSendsTheTokenToAFilesObserver(t *testing.T) {
	const token = "env-admin-token-0123456789abcdef0123456789"
	sim := startSim(t, fleet.Demo())
	observer, got := vendor(t, sim.URL(), token)
	d := fleet.Demo()
	tg, _ := d.Target()
	ef := explore.File{Kind: explore.FileKind, Reset: true, Report: explore.Report{
		Seed: 1, Target: sim.URL(), Observer: observer, FailOn: "MUST",
		Found: &explore.Finding{Kind: "disagreement", Ops: []explore.Op{{Kind: explore.ReadDevice, MAC: tg.MAC, SN: tg.Devices["Light Dimmer"].SN}}},
	}}
	b, _ := json.Marshal(ef)
	file := filepath.Join(t.TempDir(), "explore.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"GWSIM_ADMIN_TOKEN=" + token}
	r := runCommand(t, env, "replay", file)
	if n := got.Load(); n != 0 {
		t.Errorf("replay sent the environment's token to the observer read from the file %d times\n%s%s", n, r.stdout, r.stderr)
	}
	if strings.Count(r.stderr, "$GWSIM_ADMIN_TOKEN is not sent to "+observer) != 1 {
		t.Errorf("replay does not say once that the token is not sent to %s:\n%s", observer, r.stderr)
	}
	r = runCommand(t, env, "replay", file, "--observer", observer)
	if got.Load() == 0 || strings.Count(r.stderr, "the admin token ($GWSIM_ADMIN_TOKEN) is sent to "+observer) != 1 {
		t.Errorf("replay --observer %s: token sent %d times\n%s%s", observer, got.Load(), r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, token) {
		t.Error("the token was printed")
	}
}

// replayedCheck is a check of the catalog that a hostile report names:
// gwconform replay runs the check again, as the run did.
const replayedCheck = "command.light-dimmer.dimming.101.json"

// TestReplayEscapesAndMasksAHostileReport: gwconform replay of a report
// whose title, assertion and recorded body carry ESC, BEL, CR and C1
// bytes, against a target that echoes the request (its api_key and sign)
// with more of them, prints every line escaped and neither the fleet's key
// and secret nor the sign it computed. Real file, real process, real HTTP.
func TestReplayEscapesAndMasksAHostileReport(t *testing.T) {
	const bad = "\x1b]0;owned\x07\x1b[2K\rREPRODUCED\u009b"
	var sent atomic.Value
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		sent.Store(string(b))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo"+strings.ReplaceAll(bad, "\r", ""), "x")
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"status":"error","error":{"code":"invalid_field","field":"x","message":"you sent %s %s"}}`, strings.ReplaceAll(string(b), `"`, `'`), bad)
	}))
	t.Cleanup(echo.Close)
	body := `{"api_key":"demo-key","myservice_id":"5f3a9c0e1b2d4f6a8c0e1b2d","timestamp":"20260101000000","sign":"<SIGNATURE>",` +
		`"control":{"mac":"a4c138f0e2b1","sn":"0123456789abcdef0123456789abcd06","type":"Light Dimmer","dimming":"40","note":"` +
		strings.NewReplacer("\x1b", `\u001b`, "\x07", `\u0007`, "\r", `\r`).Replace(bad) + `"}}`
	doc := map[string]any{"target": "http://example.invalid", "results": []any{map[string]any{
		"id": replayedCheck, "level": "MUST", "title": "title " + bad, "assertion": "asserts " + bad, "outcome": "failed",
		"exchanges": []any{map[string]any{"method": "POST", "url": "http://example.invalid/v1/services/gateway/command",
			"request_headers": map[string]string{"Content-Type": "application/json"}, "request_body": body, "status": 400}},
	}}}
	b, _ := json.Marshal(doc)
	file := filepath.Join(t.TempDir(), "report.json")
	os.WriteFile(file, b, 0o644)
	r := runCommand(t, nil, "replay", file, replayedCheck, "--target", echo.URL)
	out := r.stdout + r.stderr
	// The echoing target answers every request 400: the check runs again
	// and is judged, or the run stops at its pre-flight (NOT JUDGED);
	// either way requests reached it and their echoes were shown.
	if s, _ := sent.Load().(string); s == "" || r.code > 2 {
		t.Fatalf("replay: exit %d, sent %q\n%s", r.code, s, out)
	}
	_, signs := client.Credentials(sent.Load().(string))
	for _, secret := range append([]string{"demo-key", "demo-secret"}, signs...) {
		if strings.Contains(out, secret) {
			t.Errorf("replay printed %q:\n%s", secret, out)
		}
	}
	for _, c := range []string{"\x1b", "\x07", "\r", "\u009b"} {
		if strings.Contains(out, c) {
			t.Errorf("replay passes %q to the terminal:\n%q", c, out)
		}
	}
	if !strings.Contains(out, `title \x1b]0;owned\a`) {
		t.Errorf("the title is not shown escaped:\n%s", out)
	}
}

// TestReportsMaskWhatATargetEchoes: a target that echoes each request in
// its answer, in a form the field patterns do not read ('api_key':'…'),
// and a --target carrying a user and password: report.json, report.html,
// junit.xml and the console hold neither the fleet's key and secret, nor
// any sign the run computed, nor the password or user. Real process, real
// HTTP, real files.
func TestReportsMaskWhatATargetEchoes(t *testing.T) {
	var mu sync.Mutex
	var signs []string
	url := faulty(t, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		_, s := client.Credentials(string(body))
		mu.Lock()
		signs = append(signs, s...)
		mu.Unlock()
		if !regexp.MustCompile(`"dimming":"101"|<dimming>101</dimming>`).Match(body) {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		echo := strings.NewReplacer(`"`, `'`, "<", "(", ">", ")").Replace(string(body))
		fmt.Fprintf(w, `{"status":"success","echo":"you sent %s"}`, echo)
		return true
	})
	withUser := strings.Replace(url, "http://", "http://operator-name:hunter2pass@", 1)
	r := gwconform(t, "--target", withUser, "--allow-partial", "--check", "command.light-dimmer.dimming.101.*")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (101 accepted)\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	mu.Lock()
	secrets := append([]string{"demo-key", "demo-secret", "hunter2pass", "operator-name"}, signs...)
	mu.Unlock()
	if len(secrets) < 6 {
		t.Fatalf("the target saw no sign")
	}
	outputs := map[string]string{"stdout": r.stdout, "stderr": r.stderr}
	for _, name := range []string{"report.json", "junit.xml", "report.html"} {
		b, err := os.ReadFile(filepath.Join(r.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		outputs[name] = string(b)
	}
	if !strings.Contains(outputs["report.json"], "you sent") {
		t.Fatalf("the echo is not in report.json: the test shows nothing")
	}
	for name, out := range outputs {
		for _, s := range secrets {
			if s != "" && strings.Contains(out, s) {
				t.Errorf("%s holds %q", name, s)
			}
		}
	}
}

// TestReplaySendsNoSignedRequestToAFilesTarget: a report or an explore
// file naming a target that is not on loopback gets the fleet's api_key
// and a fresh sign sent there only when --target says so: without it,
// replay refuses (exit 2, saying to give --target) and nothing reaches
// the URL the file names. Real files, a real listener beyond loopback.
func TestReplaySendsNoSignedRequestToAFilesTarget(t *testing.T) {
	ip := nonLoopbackIP()
	if ip == "" {
		t.Skip("this machine has no address but loopback")
	}
	var hits atomic.Int64
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"success"}`)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	evil := "http://" + ln.Addr().String()
	body := `{"api_key":"demo-key","myservice_id":"5f3a9c0e1b2d4f6a8c0e1b2d","timestamp":"20260101000000","sign":"<SIGNATURE>",` +
		`"control":{"mac":"a4c138f0e2b1","sn":"0123456789abcdef0123456789abcd06","type":"Light Dimmer","dimming":"40"}}`
	doc := map[string]any{"target": evil, "results": []any{map[string]any{"id": replayedCheck, "level": "MUST", "title": "t", "outcome": "failed",
		"exchanges": []any{map[string]any{"method": "POST", "url": evil + "/v1/services/gateway/command",
			"request_headers": map[string]string{"Content-Type": "application/json"}, "request_body": body, "status": 200}}}}}
	b, _ := json.Marshal(doc)
	dir := t.TempDir()
	rep := filepath.Join(dir, "report.json")
	os.WriteFile(rep, b, 0o644)
	r := runCommand(t, nil, "replay", rep, replayedCheck)
	if hits.Load() != 0 || r.code != 2 || !strings.Contains(r.stderr, "give --target URL") {
		t.Errorf("replay of a report naming %s: %d requests reached it, exit %d\n%s%s", evil, hits.Load(), r.code, r.stdout, r.stderr)
	}
	// Named on the command line, it is run against (its answers of
	// success to everything fail the refusal check again, or stop the
	// run at its pre-flight).
	if r := runCommand(t, nil, "replay", rep, replayedCheck, "--target", evil); hits.Load() == 0 || r.code > 2 {
		t.Errorf("replay --target %s: %d requests, exit %d\n%s%s", evil, hits.Load(), r.code, r.stdout, r.stderr)
	}
	tg, _ := fleet.Demo().Target()
	ef := explore.File{Kind: explore.FileKind, Report: explore.Report{Seed: 1, Target: evil, FailOn: "MUST",
		Found: &explore.Finding{Kind: "disagreement", Ops: []explore.Op{{Kind: explore.ReadDevice, MAC: tg.MAC, SN: tg.Devices["Light Dimmer"].SN}}}}}
	b, _ = json.Marshal(ef)
	exp := filepath.Join(dir, "explore.json")
	os.WriteFile(exp, b, 0o644)
	hits.Store(0)
	r = runCommand(t, nil, "replay", exp)
	if hits.Load() != 0 || r.code != 2 || !strings.Contains(r.stderr, "give --target URL") {
		t.Errorf("replay of an explore file naming %s: %d requests reached it, exit %d\n%s%s", evil, hits.Load(), r.code, r.stdout, r.stderr)
	}
}

// TestVerboseConsoleMasksWhatATargetStored: with -v, Ginkgo's own report
// goes to the console while the run goes on, failure messages with what
// the observer showed included. A target that stores, as the name a
// rename asked for, the api_key and the sign of that very request (a sign
// computed moments before the line is written) shows neither on the
// console: the lines are masked by value as they are written, not only by
// the field patterns.
func TestVerboseConsoleMasksWhatATargetStored(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var signs []string
	name := regexp.MustCompile(`"name":"[^"]*"`)
	sim := simulator.New(simulator.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	h := sim.Server.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if strings.HasSuffix(r.URL.Path, "/update_name") && !strings.Contains(r.Header.Get("Content-Type"), "xml") {
			if keys, s := client.Credentials(string(body)); len(keys) > 0 && len(s) > 0 {
				mu.Lock()
				signs = append(signs, s...)
				mu.Unlock()
				body = name.ReplaceAll(body, []byte(`"name":"k=`+keys[0]+` s=`+s[0]+`"`))
			}
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	v := gwconform(t, "--target", srv.URL, "--allow-partial", "--check", "effect.update_name.light-dimmer.stored.json", "--settle", "200ms", "-v")
	if v.code != 1 || !strings.Contains(v.stdout, "k=") {
		t.Fatalf("exit %d, or the stored name is not on the console: the test shows nothing\n%s\n%s", v.code, tail(v.stdout), v.stderr)
	}
	mu.Lock()
	secrets := append([]string{"demo-key", "demo-secret"}, signs...)
	mu.Unlock()
	if len(secrets) < 3 {
		t.Fatal("the target saw no sign")
	}
	for _, s := range secrets {
		if strings.Contains(v.stdout, s) || strings.Contains(v.stderr, s) {
			t.Errorf("the console holds %q", s)
		}
	}
}
