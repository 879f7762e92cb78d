package main

import (
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/bundle"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// The harness against an implementation written from the two texts alone
// (independent_impl_test.go), whose reads of CONTRACT 7 are on a port of
// their own: through --observer the effect checks run and catch what only
// effects show; a target that refuses every request stops at the
// pre-flight with one line; without an observer the run says so in one
// line.

// indepDoc is the part of report.json these tests read.
type indepDoc struct {
	Verdict string `json:"verdict"`
	Effects string `json:"effects"`
	Summary struct {
		Passed       int `json:"passed"`
		Inconclusive int `json:"inconclusive"`
		ByLevel      map[string]struct {
			Passed, Failed, Skipped, Inconclusive int
		} `json:"by_level"`
	} `json:"summary"`
	Results []struct {
		ID      string `json:"id"`
		Level   string `json:"level"`
		Outcome string `json:"outcome"`
		Reason  string `json:"reason"`
		Failure string `json:"failure"`
	} `json:"results"`
}

func readIndepDoc(t *testing.T, dir string) indepDoc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatalf("report.json: %v", err)
	}
	var d indepDoc
	if b, err = expandReport(b); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	return d
}

// outcomes maps each check ID to its outcome.
func (d indepDoc) outcomes() map[string]string {
	out := map[string]string{}
	for _, r := range d.Results {
		out[r.ID] = r.Outcome
	}
	return out
}

func indepFleetFile(t *testing.T, key, secret string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(p, []byte(indepFleetYAML(key, secret)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestIndependentTargetPassesThroughItsObserver: the faithful independent
// implementation passes the whole suite, effect checks included, read
// through --observer on its separate port.
func TestIndependentTargetPassesThroughItsObserver(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	api, reads := newIndepTarget(indepDeviation{}).serve(t)
	r := gwconform(t, "--target", api, "--observer", reads, "--fleet", indepFleetFile(t, indepKey, indepSecret))
	d := readIndepDoc(t, r.dir)
	var failedIDs []string
	effects, states := 0, 0
	for _, res := range d.Results {
		if res.Outcome == "failed" && res.Level == "MUST" {
			failedIDs = append(failedIDs, res.ID+": "+strings.SplitN(res.Failure, "\n", 2)[0])
		}
		if strings.HasPrefix(res.ID, "effect.") && res.Outcome == "passed" {
			effects++
		}
		if strings.HasSuffix(res.ID, ".sim") && res.Outcome == "passed" {
			states++ // the cases' own state checks, through a plain observer
		}
	}
	if r.code != 0 || d.Verdict != "PASS" {
		t.Fatalf("exit %d, verdict %s, MUST failures:\n%s\n%s", r.code, d.Verdict, strings.Join(first(failedIDs, 20), "\n"), tail(r.stdout))
	}
	if effects < 60 || states < 500 || d.Effects != "" || strings.Contains(r.stdout, "effects not observed") {
		t.Errorf("effect checks passed: %d, state checks passed: %d; effects line %q", effects, states, d.Effects)
	}
	if d.Summary.Inconclusive != 0 {
		t.Errorf("%d inconclusive checks against a faithful target", d.Summary.Inconclusive)
	}
}

// TestIndependentDeviationsOnlyEffectsShow: each deviation answers every
// request as the faithful target does; only what the observer shows
// differs, and the effect check of that effect fails.
func TestIndependentDeviationsOnlyEffectsShow(t *testing.T) {
	simtest.Heavy(t)
	for _, c := range []struct {
		name string
		dev  indepDeviation
		// fail are checks that must fail; pass, checks that must still pass.
		fail, pass []string
	}{
		{"a rename answers success and keeps the old name", indepDeviation{renameKeepsOld: true},
			[]string{"effect.update_name.light-dimmer.stored.json", "effect.update_name.thermostat.stored.xml", "effect.update_name.trimmed.json"},
			[]string{"effect.command.light-dimmer.applied.json", "effect.message.stored.xml"}},
		{"a refused command still applies its other fields", indepDeviation{refusedAppliesOthers: true},
			[]string{"effect.command.thermostat.refused-partly-invalid.json", "effect.command.appliance-module-plus.refused-partly-invalid.xml"},
			[]string{"effect.command.thermostat.applied.json", "effect.command.thermostat.refused-bad-sign.xml"}},
		{"a message is stored on another gateway", indepDeviation{messageElsewhere: true},
			[]string{"effect.message.stored.json", "effect.message.other-gateway.xml"},
			[]string{"effect.command.light-dimmer.applied.xml"}},
		{"a value is stored as sent, not in its published case", indepDeviation{storeAsSent: true},
			[]string{"effect.command.thermostat.enum-case.json", "effect.command.infrared-sensor.enum-case.xml"},
			[]string{"effect.command.thermostat.applied.json"}},
		{"success to every valid request, and nothing changes", indepDeviation{noChange: true},
			[]string{"effect.command.light-dimmer.applied.json", "effect.command.thermostat.applied.xml", "effect.update_name.relay-module.stored.json", "effect.message.stored.xml"},
			nil},
		// Changes that also land where they were not sent: each is read
		// on every other device and gateway of the account.
		{"a rename also renames the device at the same place on another gateway", indepDeviation{renameSamePlace: true},
			[]string{"effect.update_name.appliance-module.stored.json", "effect.update_name.appliance-module.stored.xml", "effect.update_name.trimmed.json"},
			[]string{"effect.update_name.light-dimmer.stored.json", "effect.command.appliance-module.applied.json"}},
		{"a message to a gateway other than the account's first is stored on the first", indepDeviation{messageToFirst: true},
			[]string{"effect.message.named-gateway.json", "effect.message.named-gateway.xml"},
			[]string{"effect.message.stored.json", "effect.message.other-gateway.xml"}},
		{"a command also sets the device of the same type on another gateway", indepDeviation{commandElsewhere: true},
			[]string{"effect.command.light-dimmer.applied.json", "effect.command.light-dimmer.applied.xml"},
			[]string{"effect.command.thermostat.applied.json", "effect.command.isolation.json", "effect.update_name.light-dimmer.stored.json"}},
	} {
		c := c
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			api, reads := newIndepTarget(c.dev).serve(t)
			// The effect checks and the cases' own state checks: every
			// answer is the faithful one, so no other check could tell.
			r := gwconform(t, "--target", api, "--observer", reads, "--fleet", indepFleetFile(t, indepKey, indepSecret),
				"--check", "effect.*", "--check", "*.sim", "--allow-partial", "--fail-on", "should")
			if r.code != 1 {
				t.Fatalf("exit %d, want 1\n%s\n%s", r.code, tail(r.stdout), r.stderr)
			}
			got := readIndepDoc(t, r.dir).outcomes()
			for _, id := range c.fail {
				if got[id] != "failed" {
					t.Errorf("%s: %q, want failed", id, got[id])
				}
			}
			for _, id := range c.pass {
				if got[id] != "passed" {
					t.Errorf("%s: %q, want passed", id, got[id])
				}
			}
		})
	}
}

// TestIndependentTargetRefusingEverythingStopsAtThePreflight: a run that
// could only pass by default stops before any check, exit 2, with one
// line that names the likely cause.
func TestIndependentTargetRefusingEverythingStopsAtThePreflight(t *testing.T) {
	faithful, _ := newIndepTarget(indepDeviation{}).serve(t)
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"status":"error","error":{"code":"bad_signature","field":"sign","message":"the sign does not match"}}`)
	}))
	t.Cleanup(refusing.Close)
	late := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Date", time.Now().Add(-2*time.Hour).UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"status":"error","error":{"code":"stale_timestamp","field":"timestamp","message":"stale"}}`)
	}))
	t.Cleanup(late.Close)
	tlsTarget := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tlsTarget.Config.ErrorLog = log.New(io.Discard, "", 0) // each plain request is a handshake error
	tlsTarget.StartTLS()
	t.Cleanup(tlsTarget.Close)
	garbage, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { garbage.Close() })
	go func() {
		for {
			c, err := garbage.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				c.Read(make([]byte, 4096))
				io.WriteString(c, "220 smtp.example ESMTP ready\r\n")
			}()
		}
	}()
	good := indepFleetFile(t, indepKey, indepSecret)
	for _, c := range []struct {
		name, target, fleet string
		want                []string
	}{
		{"404 on every path: the base URL ends in /v1", faithful + "/v1", good,
			[]string{"HTTP 404", "expected at " + faithful + "/v1/services/…", "you gave …/v1"}},
		{"401 bad_signature to every request", refusing.URL, good,
			[]string{"bad_signature", "check the secret of api_key vend…"}},
		{"a wrong secret in the fleet", faithful, indepFleetFile(t, indepKey, "not-the-secret"),
			[]string{"bad_signature", "check the secret of api_key vend…"}},
		{"the unedited template", faithful, indepFleetFile(t, "demo-key", "demo-secret"),
			[]string{"unknown_api_key", "not registered at the target; is this the unedited template?"}},
		{"clocks two hours apart", late.URL, good,
			[]string{"stale_timestamp", "the clocks differ by 720"}}, // 7200 s, give or take the Date header's second
		{"HTTP against TLS", strings.Replace(tlsTarget.URL, "https://", "http://", 1), good,
			[]string{"speaks TLS", "https://"}},
		{"TLS against HTTP", strings.Replace(faithful, "http://", "https://", 1), good,
			[]string{"speaks plain HTTP", "http://"}},
		{"a port that does not speak HTTP", "http://" + garbage.Addr().String(), good,
			[]string{"does not speak HTTP"}},
	} {
		c := c
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := gwconform(t, "--target", c.target, "--fleet", c.fleet, "--timeout", "3s")
			line := strings.TrimSpace(r.stderr)
			if r.code != 2 || strings.Count(line, "\n") != 0 {
				t.Fatalf("exit %d, want 2 and one line; stderr:\n%s\nstdout:\n%s", r.code, r.stderr, tail(r.stdout))
			}
			for _, w := range c.want {
				if !strings.Contains(line, w) {
					t.Errorf("the line does not say %q:\n%s", w, line)
				}
			}
			for _, secret := range []string{indepSecret, "not-the-secret", indepKey} {
				if strings.Contains(r.stdout+r.stderr, secret) {
					t.Errorf("the output carries %q", secret)
				}
			}
			if _, err := os.Stat(filepath.Join(r.dir, "report.json")); err == nil {
				t.Error("a report was written: some check ran")
			}
		})
	}
	// Past the pre-flight on purpose, no refusal passes by default: each
	// is inconclusive, counted apart, and nothing passes.
	t.Run("--skip-preflight: refusals are inconclusive, none passes", func(t *testing.T) {
		t.Parallel()
		r := gwconform(t, "--target", refusing.URL, "--fleet", good, "--skip-preflight", "--no-observer",
			"--check", "command.light-dimmer.*", "--check", "*.envelope.sign.*", "--check", "*.method.*", "--allow-partial")
		d := readIndepDoc(t, r.dir)
		if r.code != 1 {
			t.Errorf("exit %d, want 1", r.code)
		}
		for _, res := range d.Results {
			if res.Outcome == "passed" && res.Level != "INFO" {
				t.Errorf("%s %s passed against a target that refuses everything", res.Level, res.ID)
			}
		}
		if d.Summary.Inconclusive < 20 || !strings.Contains(r.stdout, "inconclusive") {
			t.Errorf("%d inconclusive checks; the summary:\n%s", d.Summary.Inconclusive, tail(r.stdout))
		}
		for _, res := range d.Results {
			if res.Outcome == "inconclusive" && !strings.Contains(res.Reason, "was refused") {
				t.Errorf("%s: inconclusive without saying why: %q", res.ID, res.Reason)
			}
		}
		b, _ := os.ReadFile(filepath.Join(r.dir, "junit.xml"))
		if !strings.Contains(string(b), `name="gwconform.inconclusive"`) {
			t.Error("junit.xml does not count the inconclusive checks")
		}
	})
}

// TestIndependentTargetWithoutObserver: the target alone does not answer
// the reads: the effect checks are skipped with one line that says so, in
// the summary, report.json, the bundle's manifest and gwconform verify; a
// certified run needs an observer or --no-observer.
func TestIndependentTargetWithoutObserver(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	api, _ := newIndepTarget(indepDeviation{}).serve(t)
	fleet := indepFleetFile(t, indepKey, indepSecret)
	r := gwconform(t, "--target", api, "--fleet", fleet, "--check", "effect.*", "--check", "command.light-dimmer.valid.*", "--allow-partial")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	d := readIndepDoc(t, r.dir)
	const line = "effects not observed: the target does not answer the reads of CONTRACT 7"
	if !strings.HasPrefix(d.Effects, line) || strings.Count(r.stdout, "effects not observed") != 1 {
		t.Errorf("report.json effects %q; summary:\n%s", d.Effects, tail(r.stdout))
	}
	for _, res := range d.Results {
		if strings.HasPrefix(res.ID, "effect.") && (res.Outcome != "skipped" || !strings.HasPrefix(res.Reason, line)) {
			t.Errorf("%s: %s (%q)", res.ID, res.Outcome, res.Reason)
		}
	}
	if got := d.outcomes()["command.light-dimmer.valid.json"]; got != "passed" {
		t.Errorf("the valid command: %s", got)
	}

	// Certified: refused without an observer, before a check runs.
	cert := []string{"--target", api, "--fleet", fleet, "--mode", "certified", "--product", "Indep", "--product-version", "1"}
	r = gwconform(t, append(cert, "--bundle", filepath.Join(t.TempDir(), "b.tar.gz"))...)
	if r.code != 2 || !strings.Contains(r.stderr, "--observer") || !strings.Contains(r.stderr, "--no-observer") {
		t.Fatalf("certified without an observer: exit %d\n%s", r.code, r.stderr)
	}
	// With --no-observer the certificate records it, and verify says it.
	bundlePath := filepath.Join(t.TempDir(), "b.tar.gz")
	r = gwconform(t, append(cert, "--bundle", bundlePath, "--no-observer")...)
	if r.code > 1 {
		t.Fatalf("certified with --no-observer: exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	out, _ := exec.Command(bins.gwconform, "verify", bundlePath, "--integrity-only").CombinedOutput()
	if !strings.Contains(string(out), "unsigned: integrity only") || !strings.Contains(string(out), "effects not observed: --no-observer") {
		t.Errorf("verify:\n%s", out)
	}
	files, err := bundle.Read(bundlePath)
	if err != nil {
		t.Fatal(err)
	}
	var m bundle.Manifest
	if err := json.Unmarshal(files[bundle.ManifestFile], &m); err != nil || !m.NoObserver || !strings.HasPrefix(m.Effects, "effects not observed") {
		t.Errorf("the manifest does not record --no-observer: %+v (%v)", m, err)
	}
	// A forger who says the effects were observed, hashes fixed, is caught.
	var raw map[string]any
	json.Unmarshal(files[bundle.ManifestFile], &raw)
	raw["effects"], raw["no_observer"] = bundle.EffectsObserved, false
	files[bundle.ManifestFile], _ = json.Marshal(raw)
	out, _ = exec.Command(bins.gwconform, "verify", rewrite(t, files, true)).CombinedOutput()
	if !strings.Contains(string(out), "NOT VERIFIED") || !strings.Contains(string(out), "effects") {
		t.Errorf("verify of a manifest claiming observed effects:\n%s", out)
	}
}
