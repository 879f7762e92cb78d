package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// Secrets the test puts in every place one can come from.
const (
	envToken   = "envtoken-5c1e7a-0a1b2c3d4e5f67890abc"
	flagToken  = "flagtoken-9d3b2f-0a1b2c3d4e5f67890abc"
	fleetKey   = "fleetkey-7e21aa"
	fleetSec   = "fleetsecret-42b8c0"
	signSecret = "GWCONFORM_TEST_SIGN"
)

func secretFleet(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../fixtures/demo-fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer("demo-key", fleetKey, "demo-secret", fleetSec).Replace(string(b))
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runProgram runs a program with the secret-carrying environment.
func runProgram(t *testing.T, dir, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GWSIM_ADMIN_TOKEN="+envToken, "GWSIM_SECRET="+fleetSec)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// TestNoSecretInAnyOutput: with a known secret, admin token and api_key
// in every variable, flag and fleet that can carry one, no usage text,
// error, banner, log (text and JSON), dashboard data or event stream,
// journal, console output, report, bundle or ack log of either program
// shows any of them, or a sign. (gwconform sign prints a sign by design:
// its stdout alone is exempt.)
func TestNoSecretInAnyOutput(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	dir := t.TempDir()
	fleetFile := secretFleet(t)
	var outputs []string
	add := func(name, out string) {
		// The command line itself is not output: it is taken out.
		out = strings.Replace(out, name, "", 1)
		outputs = append(outputs, label(strings.Fields(name))+"\n"+out)
	}
	for _, args := range [][]string{
		{"serve", "-h"}, {"serve", "--bogus"}, {"serve", "--admin-token", flagToken, "--bogus"}, {"fleet", "-h"}, {"-h"}, {"--version"},
		{"serve", "--fleet", fleetFile, "--admin-token", flagToken, "--addr", "bad address"},
		{"serve", "--fleet", fleetFile, "--log-format", "json", "--admin-token", flagToken, "--addr", "bad address"},
		{"serve", "--log-format", "json", "--admin-token", flagToken, "--bogus"},
		{"send", "-h"}, {"send", "command", "--fleet", fleetFile, "--target", "http://127.0.0.1:1", "--type", "Light Dimmer", "dimming=40"},
		{"send", "command", "--fleet", fleetFile, "--secret", fleetSec, "--api-key", fleetKey, "--bogus"},
	} {
		add("gwsim "+label(args), runProgram(t, dir, bins.gwsim, args...))
	}
	for _, args := range [][]string{
		{"run", "-h"}, {"run", "--bogus"}, {"run", "--admin-token", flagToken, "--bogus"}, {"load", "-h"}, {"load", "--bogus"},
		{"checks", "-h"}, {"sign", "-h"}, {"verify", "-h"}, {"replay", "-h"}, {"baseline", "-h"}, {"-h"}, {"--version"},
		{"run", "--fleet", fleetFile, "--admin-token", flagToken, "--target", "http://127.0.0.1:1"},
		{"run", "--fleet", fleetFile, "--target", "ftp://gw:" + flagToken + "@127.0.0.1:1"},
		{"run", "--fleet", fleetFile, "--target", "http://gw:" + flagToken + "@127.0.0.1:1/?q"},
		{"run", "--fleet", fleetFile, "--target", "http://gw:" + flagToken + "@127.0.0.1:1"},
		{"load", "--fleet", fleetFile, "--target", "http://gw:" + flagToken + "@127.0.0.1:1", "--requests", "1"},
		{"load", "--fleet", fleetFile, "--target", "ftp://gw:" + flagToken + "@127.0.0.1:1", "--requests", "1"},
		{"sign", "--fleet", fleetFile, "--bogus"}, {"verify", filepath.Join(dir, "none.tar.gz")},
		{"load", "merge", "-h"}, {"load", "check-acks", "-h"}, {"load", "merge", "--bogus"},
		{"load", "check-acks", "acks.jsonl", "--target", "ftp://gw:" + flagToken + "@127.0.0.1:1"},
	} {
		add("gwconform "+label(args), runProgram(t, dir, bins.gwconform, args...))
	}

	// gwsim serve with the secret fleet, the token and every log there is,
	// in both formats: its banner, its logs, its dashboard's data and event
	// stream, its journal.
	var sims []*servedSim
	for _, format := range []string{"text", "json"} {
		sim := serveSim(t, "--fleet", fleetFile, "--admin-token", flagToken, "--access-log", "--log-level", "debug", "--log-format", format)
		sims = append(sims, sim)
		add("gwsim send to serve "+format, runProgram(t, dir, bins.gwsim, "send", "command", "--target", sim.url, "--fleet", fleetFile,
			"--type", "Light Dimmer", "dimming=40"))
		add("gwsim send (rejected) to serve "+format, runProgram(t, dir, bins.gwsim, "send", "command", "--target", sim.url, "--fleet", fleetFile,
			"--type", "Light Dimmer", "dimming=400"))
		add("gwsim send (credentials as flags) to serve "+format, runProgram(t, dir, bins.gwsim, "send", "message", "--target", sim.url,
			"--api-key", fleetKey, "--secret", fleetSec, "--fleet", fleetFile, "brightness=80"))
	}
	sim := sims[0]
	events := sim.stream(t, "/_sim/events")
	reportDir := filepath.Join(dir, "reports")
	bundlePath := filepath.Join(dir, "b.tar.gz")
	signKey := filepath.Join(dir, "sign-key")
	add("gwconform keygen", runProgram(t, dir, bins.gwconform, "keygen", "--out", signKey))
	pem, _ := os.ReadFile(signKey)
	signKeySecret := strings.Split(string(pem), "\n")[1] // the key's base64, between the PEM lines
	add("gwconform run", runProgram(t, dir, bins.gwconform, "run", "--target", sim.url, "--fleet", fleetFile,
		"--admin-token", flagToken, "--report-dir", reportDir, "--bundle", bundlePath, "--fail-on", "should", "--sign-key", signKey))
	add("gwconform load", runProgram(t, dir, bins.gwconform, "load", "--target", sim.url, "--fleet", fleetFile, "--requests", "50", "--json"))
	// Over two targets, with an ack log: neither the output nor the log
	// holds a key, secret or sign.
	ackLog := filepath.Join(dir, "acks.jsonl")
	add("gwconform load --ack-log", runProgram(t, dir, bins.gwconform, "load", "--target", sim.url+","+sim.url, "--fleet", fleetFile,
		"--requests", "50", "--mix", "command=1,message=1,rename=1", "--ack-log", ackLog))
	if b, err := os.ReadFile(ackLog); err != nil || strings.Count(string(b), "\n") != 50 {
		t.Errorf("load --ack-log (50 lines): %v, %q", err, b)
	} else {
		add("ack log", string(b))
	}
	for _, path := range []string{"/_sim/state", "/_sim/journal", "/_sim/dashboard/data", "/_sim/gateways/a4c138f0e2b1/messages",
		"/_sim/gateways/a4c138f0e2b1/devices/0123456789abcdef0123456789abcd06", "/_sim/faults", "/_sim/health", "/_sim/session"} {
		add("GET "+path, sim.get(t, path))
	}
	add("GET /_sim/events", events())
	// check-acks with the token from the flag (and from the environment),
	// a load's report directory and its merge.
	outputs = append(outputs, runProgram(t, dir, bins.gwconform, "load", "check-acks", ackLog, "--target", sim.url, "--admin-token", flagToken))
	outputs = append(outputs, runProgram(t, dir, bins.gwconform, "load", "check-acks", ackLog, "--target", sim.url))
	loadDir := filepath.Join(dir, "load")
	outputs = append(outputs, runProgram(t, dir, bins.gwconform, "load", "--target", "http://gw:"+flagToken+"@"+strings.TrimPrefix(sim.url, "http://"),
		"--fleet", fleetFile, "--requests", "30", "--shard", "0/2", "--report-dir", filepath.Join(loadDir, "s0")))
	outputs = append(outputs, runProgram(t, dir, bins.gwconform, "load", "merge", "--report-dir", filepath.Join(loadDir, "merged"), loadDir))
	for _, name := range []string{"s0/load.json", "s0/report.html", "merged/load.json", "merged/report.html"} {
		b, err := os.ReadFile(filepath.Join(loadDir, name))
		if err != nil {
			t.Fatal(err)
		}
		outputs = append(outputs, name+"\n"+string(b))
	}
	for _, name := range []string{"report.json", "junit.xml", "report.html"} {
		b, err := os.ReadFile(filepath.Join(reportDir, name))
		if err != nil {
			t.Fatal(err)
		}
		add(name, string(b))
	}
	for name, b := range bundleFiles(t, bundlePath) {
		add("bundle "+name, string(b))
	}
	// The tools that read a report: baseline, verify, replay, sign.
	report := filepath.Join(reportDir, "report.json")
	add("gwconform baseline", runProgram(t, dir, bins.gwconform, "baseline", report))
	add("gwconform verify", runProgram(t, dir, bins.gwconform, "verify", bundlePath, "--key", signKey+".pub"))
	// (An INFO probe keeps its exchanges in the reports.)
	add("gwconform replay", runProgram(t, dir, bins.gwconform, "replay", report, "probe.device_id-alias.json", "--target", sim.url, "--fleet", fleetFile))
	add("gwconform replay (bundle)", runProgram(t, dir, bins.gwconform, "replay", bundlePath, "probe.device_id-alias.json", "--target", sim.url, "--fleet", fleetFile))
	signCmd := exec.Command(bins.gwconform, "sign", "--fleet", fleetFile)
	signCmd.Stdin = strings.NewReader(`{"control":{"api_key":"flee…","myservice_id":"5f3a9c0e1b2d4f6a8c0e1b2d","timestamp":"20200101000000","sign":"<SIGNATURE>"}}`)
	var signErr strings.Builder
	signCmd.Stderr = &signErr
	if signed, err := signCmd.Output(); err != nil || !strings.Contains(string(signed), fleetKey) {
		t.Errorf("gwconform sign with a masked api_key: %v %s %s", err, signed, signErr.String())
	}
	add("gwconform sign (stderr)", signErr.String())
	// gwsim proxy in front of the simulator, recording: what it prints,
	// its journal, its live page's data, its reports of the app and the
	// service, gwsim clients in every format, and its cassettes.
	cassettes := filepath.Join(dir, "cassettes")
	px := serveProgram(t, "proxy", "--upstream", sim.url, "--fleet", fleetFile, "--admin-token", flagToken, "--record", cassettes)
	add("gwsim send through proxy", runProgram(t, dir, bins.gwsim, "send", "command", "--target", px.url, "--fleet", fleetFile,
		"--type", "Light Dimmer", "dimming=40"))
	add("gwsim send (rejected) through proxy", runProgram(t, dir, bins.gwsim, "send", "command", "--target", px.url, "--fleet", fleetFile,
		"--type", "Light Dimmer", "dimming=400"))
	for _, path := range []string{"/_sim/clients", "/_sim/service", "/_sim/journal", "/_sim/report", "/_sim/health", "/_sim/session"} {
		add("proxy GET "+path, px.get(t, path))
	}
	for _, target := range []string{px.url, sim.url} {
		for _, f := range []string{"text", "json", "junit", "html"} {
			add("gwsim clients "+f+" of "+target, runProgram(t, dir, bins.gwsim, "clients", "--target", target, "--admin-token", flagToken, "--format", f))
		}
	}
	add("gwsim clients (bad token)", runProgram(t, dir, bins.gwsim, "clients", "--target", px.url))
	add("gwsim proxy", px.stop(t))
	recorded := 0
	filepath.WalkDir(cassettes, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			add("cassette "+d.Name(), string(b))
			recorded++
		}
		return nil
	})
	if recorded == 0 {
		t.Errorf("gwsim proxy --record wrote no cassette in %s", cassettes)
	}
	// gwsim serve playing a scenario and the recorded cassettes: its
	// banner, its logs and the scenario's status.
	played := serveSim(t, "--fleet", fleetFile, "--admin-token", flagToken, "--scenario", "../../fixtures/scenario-outage.yaml", "--replay", cassettes)
	add("gwsim send to serve --replay", runProgram(t, dir, bins.gwsim, "send", "command", "--target", played.url, "--fleet", fleetFile,
		"--type", "Light Dimmer", "dimming=40"))
	add("GET /_sim/scenario", played.get(t, "/_sim/scenario"))
	add("gwsim serve --scenario --replay", played.stop(t))
	// gwconform explore and everything it writes.
	exploreDir := filepath.Join(dir, "explore")
	add("gwconform explore", runProgram(t, dir, bins.gwconform, "explore", "--target", sim.url, "--fleet", fleetFile, "--admin-token", flagToken,
		"--operations", "300", "--report-dir", exploreDir))
	add("gwconform explore (bad target)", runProgram(t, dir, bins.gwconform, "explore", "--target", "http://gw:"+flagToken+"@127.0.0.1:1", "--fleet", fleetFile,
		"--operations", "10"))
	explored := 0
	filepath.WalkDir(exploreDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			add("explore "+d.Name(), string(b))
			explored++
		}
		return nil
	})
	if explored == 0 {
		t.Errorf("gwconform explore wrote no report in %s", exploreDir)
	}
	// gwconform diff (the simulator against itself) and everything it writes.
	diffDir := filepath.Join(dir, "diff")
	add("gwconform diff", runProgram(t, dir, bins.gwconform, "diff", "--target", sim.url, "--target", sim.url, "--fleet", fleetFile, "--admin-token", flagToken,
		"--operations", "200", "--no-reset", "--report-dir", diffDir))
	add("gwconform diff (bad target)", runProgram(t, dir, bins.gwconform, "diff", "--target", sim.url, "--target", "http://gw:"+flagToken+"@127.0.0.1:1", "--fleet", fleetFile,
		"--operations", "10"))
	filepath.WalkDir(diffDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			add("diff "+d.Name(), string(b))
		}
		return nil
	})
	for _, s := range sims {
		add("gwsim serve --log-format "+s.format, s.stop(t))
	}

	all := strings.Join(outputs, "\n")
	for _, want := range []string{"Conformance of", "credentials (from the fleet file", `"credentials_from":"the fleet file`, `"msg":"request"`, "msg=request", "verified:", "event:", "> POST " + sim.url, `"api_key":"flee…"`} {
		if !strings.Contains(all, want) {
			t.Errorf("no output has %q: something did not run", want)
		}
	}
	for _, out := range outputs {
		head, _, _ := strings.Cut(out, "\n")
		for _, secret := range []string{envToken, flagToken, fleetSec, fleetKey, signKeySecret} {
			if strings.Contains(out, secret) {
				i := strings.Index(out, secret)
				t.Errorf("%s shows %q: …%s…", head, secret, out[max(0, i-80):min(len(out), i+40)])
			}
		}
		if m := signInBody.FindString(out); m != "" {
			t.Errorf("%s shows a sign: %s", head, m)
		}
	}
	// In JSON, everything gwsim serve writes is JSON, its errors included.
	for _, out := range []string{sims[1].output.String(), runProgram(t, dir, bins.gwsim, "serve", "--log-format", "json", "--bogus"),
		runProgram(t, dir, bins.gwsim, "serve", "--log-format=json", "--addr", "bad address"), runProgram(t, dir, bins.gwsim, "serve", "--log-format", "json", "--fleet", "/nonexistent")} {
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if !json.Valid([]byte(line)) {
				t.Errorf("gwsim serve --log-format json wrote a line that is not JSON: %s", line)
			}
		}
	}
}

// servedSim is gwsim serve started by a test, all its output kept.
type servedSim struct {
	url, format string
	cmd         *exec.Cmd
	output      *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var servedURL = regexp.MustCompile(`(?:gwsim (?:proxy )?listening on |"url":")(http://[^\s",]+)`)

// serveSim starts gwsim serve on a free port with the secret-carrying
// environment and waits for its banner.
func serveSim(t *testing.T, args ...string) *servedSim {
	t.Helper()
	return serveProgram(t, "serve", args...)
}

// serveProgram starts a gwsim command that serves (serve, proxy) on a
// free port with the secret-carrying environment and waits for its banner.
func serveProgram(t *testing.T, command string, args ...string) *servedSim {
	t.Helper()
	s := &servedSim{output: &lockedBuffer{}, format: "text"}
	for i, a := range args {
		if a == "--log-format" && i+1 < len(args) {
			s.format = args[i+1]
		}
	}
	s.cmd = exec.Command(bins.gwsim, append([]string{command, "--addr", "127.0.0.1:0"}, args...)...)
	s.cmd.Env = append(os.Environ(), "GWSIM_ADMIN_TOKEN="+envToken, "GWSIM_SECRET="+fleetSec)
	s.cmd.Stdout, s.cmd.Stderr = s.output, s.output
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := servedURL.FindStringSubmatch(s.output.String()); m != nil {
			s.url = m[1]
			return s
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("gwsim serve printed no banner:\n%s", s.output.String())
	return nil
}

func (s *servedSim) get(t *testing.T, path string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", s.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+flagToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}

// stream reads an event stream in the background until the function it
// returns is called, which returns what came.
func (s *servedSim) stream(t *testing.T, path string) func() string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+flagToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var got lockedBuffer
	done := make(chan struct{})
	go func() { io.Copy(&got, resp.Body); close(done) }()
	return func() string {
		cancel()
		<-done
		resp.Body.Close()
		return got.String()
	}
}

// stop interrupts gwsim serve and returns all it wrote.
func (s *servedSim) stop(t *testing.T) string {
	t.Helper()
	s.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		t.Errorf("gwsim serve did not stop")
	}
	return s.output.String()
}

// label names a command line in a message without the secret it carries.
func label(args []string) string {
	return strings.NewReplacer(flagToken, "TOKEN", fleetSec, "SECRET", fleetKey, "KEY").Replace(strings.Join(args, " "))
}

// TestQuietPlainVersionedOutput: a passing run off a terminal has no
// colour and no observation noise; --color always brings colour; the
// reports of a passing run stay under 1 KB a check together and name the harness
// and catalog; --version answers; a dry run writes no report unless told
// where.
func TestQuietPlainVersionedOutput(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	r := gwconform(t)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, tail(r.stdout))
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("colour codes in output that is not a terminal:\n%q", tail(r.stdout))
	}
	if n := strings.Count(r.stdout, "\n"); n > 40 {
		t.Errorf("a passing run printed %d lines", n)
	}
	if strings.Contains(r.stdout, "offsets accepted") {
		t.Error("INFO observations on the console without -v")
	}
	size := int64(0)
	for _, name := range []string{"report.json", "junit.xml"} {
		fi, err := os.Stat(filepath.Join(r.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
	}
	// The reports grow with the catalog (some 850 bytes a check in the
	// two), never with what a passing run's exchanges carried.
	if limit := int64(1000 * len(conformance.Checks())); size >= limit {
		t.Errorf("a passing run's report.json and junit.xml take %d bytes together, want under %d (1 KB a check)", size, limit)
	}
	j, _ := os.ReadFile(filepath.Join(r.dir, "junit.xml"))
	rj, _ := os.ReadFile(filepath.Join(r.dir, "report.json"))
	for _, want := range []string{"gwconform.catalog_version", "gwconform.catalog_hash", "gwconform.harness_version"} {
		if !strings.Contains(string(j), want) {
			t.Errorf("junit.xml has no %s", want)
		}
	}
	if !strings.Contains(string(rj), `"catalog_hash"`) || !strings.Contains(string(rj), `"catalog_version"`) {
		t.Error("report.json does not name its catalog")
	}
	if c := gwconform(t, "--color", "always", "--check", "command.light-dimmer.valid.json", "--allow-partial"); !strings.Contains(c.stdout, "\x1b[") {
		t.Error("--color always gave no colour")
	}
	for bin, name := range map[string]string{bins.gwsim: "gwsim", bins.gwconform: "gwconform"} {
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), name+" ") || !strings.Contains(string(out), "go1.") {
			t.Errorf("%s --version: %v %q", name, err, out)
		}
	}
	cwd := t.TempDir()
	out := runProgram(t, cwd, bins.gwconform, "run", "--dry-run", "--check", "message.valid.*")
	if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
		t.Errorf("a dry run wrote %v", entries)
	}
	if !strings.Contains(out, `"message_type":"message"`) || !strings.Contains(out, "<message_type>message</message_type>") {
		t.Errorf("a dry run does not print the bodies:\n%s", out)
	}
}
