package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// bins holds the two programs, built once for all tests (simtest.Binary).
var bins struct{ gwsim, gwconform string }

func TestMain(m *testing.M) {
	// This test binary started again as gwconform with a deviant embedded
	// simulator (TestMutationScore).
	if id, ok := os.LookupEnv(deviationEnv); ok {
		os.Exit(runDeviation(id, os.Args[1:]))
	}
	// Both built side by side: from a fresh clone, each links for seconds.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, b := range []struct {
		out  *string
		name string
	}{{&bins.gwsim, "gwsim"}, {&bins.gwconform, "gwconform"}} {
		wg.Go(func() { *b.out, errs[i] = simtest.BuildBinary(b.name) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		panic(err)
	}
	code := m.Run()
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
	dir            string
	// took is the run's wall time and ps its process state (resource use).
	took time.Duration
	ps   *os.ProcessState
	// hwm is gwconform's own peak resident memory in bytes, as its
	// /proc/PID/status (VmHWM) last showed it while it ran (0 where
	// there is no /proc). Unlike ps's Maxrss it does not start from the
	// test process's own peak, which a fork hands to the child.
	hwm int64
}

func gwconform(t *testing.T, args ...string) result {
	t.Helper()
	return runGwconform(t, bins.gwconform, nil, args...)
}

// runGwconform runs gwconform run as the program bin, with env added to
// the environment.
func runGwconform(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	return runGwconformFor(t, 2*time.Minute, bin, env, args...)
}

func runGwconformFor(t *testing.T, limit time.Duration, bin string, env []string, args ...string) result {
	t.Helper()
	dir := t.TempDir()
	if !hasFlag(args, "--report-dir") {
		args = append(args, "--report-dir", dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"run"}, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	var hwm int64
	err := cmd.Start()
	if err == nil {
		stop := make(chan struct{})
		polled := make(chan struct{})
		go func() {
			defer close(polled)
			status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				if n := vmHWM(status); n > hwm {
					hwm = n
				}
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
		err = cmd.Wait()
		close(stop)
		<-polled
	}
	took := time.Since(start)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running gwconform: %v", err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String(), dir: dir, took: took, ps: cmd.ProcessState, hwm: hwm}
}

// vmHWM is the peak resident memory a /proc/PID/status gives, in bytes
// (0 when it cannot be read: no /proc, or the process has ended).
func vmHWM(status string) int64 {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

func hasFlag(args []string, f string) bool {
	for _, a := range args {
		if a == f || strings.HasPrefix(a, f+"=") {
			return true
		}
	}
	return false
}

type reportDoc struct {
	Verdict string `json:"verdict"`
	Results []struct {
		ID      string `json:"id"`
		Level   string `json:"level"`
		Outcome string `json:"outcome"`
		Failure string `json:"failure"`
		// Observations are what a check reports without judging it.
		Observations []string `json:"observations"`
		Exchanges    []struct {
			Status int `json:"status"`
		} `json:"exchanges"`
	} `json:"results"`
}

// expandReport is report.json as report.Document reads it, written with
// every result in "results": the passed checks it lists by level under
// "passed" among them, each assertion with its quoted sentence, each
// exchange in place. The tests that read a few fields of the results read
// this.
func expandReport(b []byte) ([]byte, error) {
	var d report.Document
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	return json.Marshal(d)
}

// reports checks that all three reports exist and parse, and returns
// report.json.
func reports(t *testing.T, dir string) reportDoc {
	t.Helper()
	var doc reportDoc
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatalf("report.json: %v", err)
	}
	if b, err = expandReport(b); err != nil {
		t.Fatalf("report.json does not parse as a report: %v", err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("report.json does not parse as JSON: %v", err)
	}
	j, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err != nil {
		t.Fatalf("junit.xml: %v", err)
	}
	var suites struct {
		XMLName xml.Name `xml:"testsuites"`
		Tests   int      `xml:"tests,attr"`
	}
	if err := xml.Unmarshal(j, &suites); err != nil || suites.Tests == 0 {
		t.Fatalf("junit.xml does not parse as a JUnit report (%d tests): %v", suites.Tests, err)
	}
	h, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !bytes.Contains(h, []byte("<html")) {
		t.Fatalf("report.html: %v", err)
	}
	return doc
}

func failed(doc reportDoc) map[string]string {
	out := map[string]string{}
	for _, r := range doc.Results {
		if r.Outcome == "failed" {
			out[r.ID] = r.Level
		}
	}
	return out
}

func TestRunWithNoArgumentsPassesAgainstTheEmbeddedSimulator(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	r := gwconform(t)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	doc := reports(t, r.dir)
	if doc.Verdict != "PASS" || len(failed(doc)) != 0 {
		t.Fatalf("verdict %s, failed %v", doc.Verdict, failed(doc))
	}
	ran := map[string]int{}
	for _, res := range doc.Results {
		if res.Outcome == "passed" {
			ran[res.Level]++
		}
	}
	if ran["MUST"] < 400 || ran["SHOULD"] < 400 || ran["INFO"] < 20 {
		t.Fatalf("too few checks ran: %v", ran)
	}
	if !strings.Contains(r.stdout, "MUST") || !strings.Contains(r.stdout, "report.html") {
		t.Fatalf("no summary at the end of the output:\n%s", tail(r.stdout))
	}
}

// startGwsim runs `gwsim serve` on a free loopback port and returns its URL.
func startGwsim(t *testing.T, args ...string) string {
	t.Helper()
	return simtest.Serve(t, bins.gwsim, args...).URL
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func TestRunAgainstGwsimServePassesAndPutsTheFleetBack(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	url := startGwsim(t)
	var before, after any
	getJSON(t, url+"/_sim/state", &before)
	r := gwconform(t, "--target", url)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	doc := reports(t, r.dir)
	sim := 0
	for _, res := range doc.Results {
		if strings.HasSuffix(res.ID, ".sim") && res.Outcome == "passed" {
			sim++
		}
	}
	if sim < 100 {
		t.Fatalf("the simulator-only checks did not run against a gwsim URL (%d passed)", sim)
	}
	getJSON(t, url+"/_sim/state", &after)
	devices := func(v any) string {
		b, _ := json.Marshal(v.(map[string]any)["accounts"].([]any)[0].(map[string]any)["gateways"].([]any)[0].(map[string]any)["devices"])
		return string(b)
	}
	if devices(before) != devices(after) {
		t.Fatalf("the run left devices changed:\nbefore %s\nafter  %s", devices(before), devices(after))
	}
}

// faulty wraps a real simulator with one deliberate fault.
func faulty(t *testing.T, fault func(w http.ResponseWriter, r *http.Request, body []byte) bool) string {
	t.Helper()
	sim := simulator.New(simulator.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	h := sim.Server.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if fault(w, r, body) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func success(w http.ResponseWriter, r *http.Request) {
	if strings.Contains(r.Header.Get("Content-Type"), "xml") {
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><xml><status>success</status></xml>`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"status":"success"}`)
}

func TestFaultyTargetsFailTheRunAndTheReportNamesTheCheck(t *testing.T) {
	simtest.Heavy(t)
	cases := []struct {
		name  string
		fault func(w http.ResponseWriter, r *http.Request, body []byte) bool
		want  []string
		// skipPreflight: run past the pre-flight. A fault that refuses a
		// valid request no longer needs it: the run judges it (exit 1).
		skipPreflight bool
	}{
		{"accepts dimming 101", func(w http.ResponseWriter, r *http.Request, body []byte) bool {
			if regexp.MustCompile(`"dimming":"101"|<dimming>101</dimming>`).Match(body) {
				success(w, r)
				return true
			}
			return false
		}, []string{"command.light-dimmer.dimming.101.json", "command.light-dimmer.dimming.101.xml"}, false},
		{"rejects XML cooling_point", func(w http.ResponseWriter, r *http.Request, body []byte) bool {
			if bytes.Contains(body, []byte("<cooling_point>")) {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(400)
				io.WriteString(w, `<xml><status>error</status></xml>`)
				return true
			}
			return false
		}, []string{"command.thermostat.valid.xml", "command.thermostat.cooling_point.integer.xml"}, false},
		{"answers GET", func(w http.ResponseWriter, r *http.Request, body []byte) bool {
			if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/") {
				success(w, r)
				return true
			}
			return false
		}, []string{"command.method.get.json", "message.method.get.xml", "update_name.method.get.json"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"--target", faulty(t, c.fault)}
			if c.skipPreflight {
				args = append(args, "--skip-preflight")
			}
			r := gwconform(t, args...)
			if r.code != 1 {
				t.Fatalf("exit %d, want 1\n%s\n%s", r.code, tail(r.stdout), r.stderr)
			}
			got := failed(reports(t, r.dir))
			for _, id := range c.want {
				if got[id] != "MUST" {
					t.Errorf("report.json does not name %s as a failed MUST check; failed: %v", id, got)
				}
			}
		})
	}
}

func TestShouldFailuresFailOnlyWithFailOnShould(t *testing.T) {
	simtest.Heavy(t)
	// Answers 422 where the CONTRACT says 400 for a bad dimming: a SHOULD flaw.
	url := faulty(t, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if regexp.MustCompile(`"dimming":"abc"|<dimming>abc</dimming>`).Match(body) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(422)
			io.WriteString(w, `{"status":"error","error":{"code":"invalid_field","field":"dimming","message":"bad"}}`)
			return true
		}
		return false
	})
	filter := "--ginkgo.label-filter=type:light-dimmer"
	if r := gwconform(t, "--target", url, filter, "--allow-partial"); r.code != 0 {
		t.Fatalf("--fail-on must: exit %d, want 0\n%s", r.code, tail(r.stdout))
	}
	r := gwconform(t, "--target", url, filter, "--fail-on", "should", "--allow-partial")
	if r.code != 1 {
		t.Fatalf("--fail-on should: exit %d, want 1\n%s", r.code, tail(r.stdout))
	}
	if got := failed(reports(t, r.dir)); got["command.light-dimmer.dimming.not-a-number.json.contract"] != "SHOULD" {
		t.Fatalf("failed: %v", got)
	}
}

func TestConfigurationErrorsExitTwoWithOneLine(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(bad, []byte("accounts: [ {myservice_id: nothex} ]\n"), 0o644)
	for name, args := range map[string][]string{
		"unreachable target": {"--target", "http://127.0.0.1:1"},
		"missing fleet":      {"--fleet", "/nonexistent/fleet.yaml"},
		"invalid fleet":      {"--fleet", bad},
		"bad fail-on":        {"--fail-on", "never"},
		"bad target URL":     {"--target", "ftp://example"},
		"unknown flag":       {"--no-such-flag"},
	} {
		t.Run(name, func(t *testing.T) {
			r := gwconform(t, args...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if name != "unknown flag" && strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Fatalf("want a one-line reason, got:\n%s", r.stderr)
			}
		})
	}
}

func TestDryRunSendsNothing(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	r := gwconform(t, "--target", srv.URL, "--dry-run")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	if hits.Load() != 0 {
		t.Fatalf("a dry run sent %d requests", hits.Load())
	}
	if !strings.Contains(r.stdout, "command.light-dimmer.dimming.101.json") || !strings.Contains(r.stdout, "POST "+srv.URL+"/v1/services/gateway/command") {
		t.Fatalf("the dry run does not list checks and requests:\n%s", tail(r.stdout))
	}
}

func tail(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

// A vendor whose scheme we do not know signs with its own command, given
// relative to the fleet file.
func TestSignCommandBesideTheFleetFile(t *testing.T) {
	simtest.Heavy(t)
	dir := t.TempDir()
	script := `#!/bin/sh
in=$(cat)
key=$(printf '%s' "$in" | sed -n 's/.*"api_key":"\([^"]*\)".*/\1/p')
ts=$(printf '%s' "$in" | sed -n 's/.*"timestamp":"\([^"]*\)".*/\1/p')
# A sign command signs for whichever key the fields carry.
case "$key" in other-key) secret=other-secret;; *) secret=demo-secret;; esac
printf '%s' "${key}${secret}${ts}" | md5sum | cut -c1-32
`
	if err := os.WriteFile(filepath.Join(dir, "sign.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	demo, err := os.ReadFile("../../fixtures/demo-fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fleet := filepath.Join(dir, "fleet.yaml")
	os.WriteFile(fleet, append([]byte("sign_command: [./sign.sh]\n"), demo...), 0o644)
	r := gwconform(t, "--fleet", fleet, "--ginkgo.label-filter=op:message && !sim", "--allow-partial")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	doc := reports(t, r.dir)
	for _, res := range doc.Results {
		if res.ID == "message.envelope.sign.wrong.json" && res.Outcome != "passed" {
			t.Fatalf("the wrong-sign check did not run with a sign command: %s", res.Outcome)
		}
	}
}

// A run cut short proves nothing about the checks it did not reach, even
// when none of those it reached failed.
func TestRunCutShortExitsOne(t *testing.T) {
	r := gwconform(t, "--ginkgo.timeout=200ms")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, tail(r.stdout))
	}
	if doc := reports(t, r.dir); doc.Verdict == "PASS" {
		t.Fatalf("a run cut short reports PASS")
	}
}
