package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/diff"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/conformance/rules"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// diffRun runs gwconform diff in-process.
func diffRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := diffCmd(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// deviantSim is gwsim on the demo fleet behind the mutation catalog's
// deviation id ("" for none): a second version of one implementation.
func deviantSim(t *testing.T, id string) string {
	t.Helper()
	var d *deviation
	if id != "" {
		impl, ok := deviations[id]
		if !ok {
			t.Fatalf("no deviation %q", id)
		}
		d = &impl
	}
	sim := simulator.New(simulator.Options{Fleet: fleet.Demo(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(deviant(sim.Server.Handler(), d))
	t.Cleanup(srv.Close)
	return srv.URL
}

// wholeState is everything an observer shows of the demo fleet: every
// device and every gateway's messages.
func wholeState(t *testing.T, url string) string {
	t.Helper()
	var b strings.Builder
	for _, a := range fleet.Demo().Accounts {
		for _, g := range a.Gateways {
			paths := []string{"/_sim/gateways/" + strings.ToLower(g.MAC) + "/messages"}
			for _, d := range g.Devices {
				paths = append(paths, "/_sim/gateways/"+strings.ToLower(g.MAC)+"/devices/"+strings.ToLower(d.SN))
			}
			for _, p := range paths {
				resp, err := http.Get(url + p)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				b.WriteString(p + " " + string(body) + "\n")
			}
		}
	}
	return b.String()
}

// TestDiffTwoVersions: version 2 of an implementation carries one
// deviation of the mutation catalog (it accepts a dimming of 101); diff
// finds the difference (diff.json says after how long: well within 60 s),
// shrinks it to the one request,
// says the rule table agrees with A, and writes every report; the
// reproduction script, run as it is, shows the two answers again.
func TestDiffTwoVersions(t *testing.T) {
	simtest.Heavy(t)
	v1, v2 := deviantSim(t, ""), deviantSim(t, "accepts-dimming-101")
	dir := t.TempDir()
	start := time.Now()
	code, out, errs := diffRun(t, "--target", v1, "--target", v2, "--operations", "4000", "--seed", "11", "--report-dir", dir, "--calibrate")
	if code != report.ExitFail {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	rep, err := diff.ReadFile(filepath.Join(dir, diff.JSONName))
	if err != nil {
		t.Fatal(err)
	}
	var x *diff.Difference
	for _, d := range rep.Differences {
		if d.Rule == "API-2.3.dimming" && d.Kind == "answer" {
			x = d
		}
	}
	if x == nil {
		t.Fatalf("the dimming difference was not found:\n%s", out)
	}
	if len(x.Ops) != 1 || !x.Reproducible || x.Verdict != diff.SideA || x.A.Answer == x.B.Answer || x.B.Answer != "200 success" {
		t.Errorf("difference: %d ops, reproducible %v, verdict %s, A %q B %q", len(x.Ops), x.Reproducible, x.Verdict, x.A.Answer, x.B.Answer)
	}
	if len(rep.Differences) != 1 {
		t.Errorf("want exactly the one deviation, got %d differences:\n%s", len(rep.Differences), out)
	}
	if !strings.Contains(errs, "seed 11") || !strings.Contains(out, "DIFFERENT") || !strings.Contains(out, "sh "+filepath.Join(dir, "diff-repro-")) {
		t.Errorf("the console lacks the seed, verdict or replay command:\n%s\n%s", out, errs)
	}
	if after, err := time.ParseDuration(x.FoundAfter); err != nil || after > 60*time.Second {
		t.Errorf("found after %q, want within 60 s", x.FoundAfter)
	}
	t.Logf("found after %s, the run with shrinking took %s\n%s", x.FoundAfter, time.Since(start), out)
	for _, name := range []string{diff.JSONName, diff.HTMLName, diff.JUnitName, x.Script} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"demo-key", "other-key", "demo-secret", "other-secret"} {
			if bytes.Contains(b, []byte(k)) {
				t.Errorf("%s carries %q", name, k)
			}
		}
	}
	junit, _ := os.ReadFile(filepath.Join(dir, diff.JUnitName))
	if !strings.Contains(string(junit), `failures="1"`) || !strings.Contains(string(junit), "API-2.3.dimming") {
		t.Errorf("JUnit: want one failed case for the difference:\n%s", junit)
	}
	cmd := exec.Command("sh", filepath.Join(dir, x.Script))
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bins.gwconform)+":"+os.Getenv("PATH"), "GWCONFORM_FLEET=")
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", x.Script, err, got)
	}
	// No reset unless asked for, and the whole state read after the steps.
	if !strings.Contains(string(got), "not reset: ") || strings.Count(string(got), `"accounts"`) < 2 {
		t.Errorf("the script reset without being asked, or did not read the whole state of both:\n%s", got)
	}
	a, b, _ := strings.Cut(string(got), "=== B ===")
	if !strings.Contains(a, "invalid_field") || !strings.Contains(b, `"status":"success"`) && !strings.Contains(b, "<status>success</status>") {
		t.Errorf("the script does not show A refusing and B accepting:\n%s", got)
	}
}

// TestDiffTwoCopiesAreTheSame (make test-heavy): two copies of gwsim, 60 s
// sequentially and 60 s with four clients: no difference.
func TestDiffTwoCopiesAreTheSame(t *testing.T) {
	simtest.Heavy(t)
	a, b := deviantSim(t, ""), deviantSim(t, "")
	for _, clients := range []string{"1", "4"} {
		dir := t.TempDir()
		code, out, errs := diffRun(t, "--target", a, "--target", b, "--duration", "60s", "--seed", "3", "--clients", clients, "--report-dir", dir)
		if code != report.ExitPass || !strings.Contains(out, "SAME") {
			t.Fatalf("%s clients: exit %d\n%s\n%s", clients, code, out, errs)
		}
	}
}

// TestDiffReadOnly: staging against production, read-only: only requests
// the rule table says change nothing; neither target's state changes,
// and a difference in how they refuse is still found.
func TestDiffReadOnly(t *testing.T) {
	t.Parallel()
	staging, prod := deviantSim(t, "answers-errors-without-field"), deviantSim(t, "")
	beforeS, beforeP := wholeState(t, staging), wholeState(t, prod)
	dir := t.TempDir()
	code, out, errs := diffRun(t, "--target", staging, "--target", prod, "--read-only", "--operations", "500", "--seed", "5", "--report-dir", dir)
	if code != report.ExitFail {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	if afterS, afterP := wholeState(t, staging), wholeState(t, prod); afterS != beforeS || afterP != beforeP {
		t.Errorf("read-only changed a target's state:\nstaging before %s\nafter %s\nproduction before %s\nafter %s", beforeS, afterS, beforeP, afterP)
	}
	rep, err := diff.ReadFile(filepath.Join(dir, diff.JSONName))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.ReadOnly || len(rep.Differences) == 0 {
		t.Fatalf("read-only: %v, %d differences\n%s", rep.ReadOnly, len(rep.Differences), out)
	}
	named := 0
	for _, x := range rep.Differences {
		// Production names the field; where the CONTRACT names none (a
		// refused credential, gateway or device), both answers are allowed.
		if x.Verdict != diff.SideB && x.Verdict != diff.BothSides {
			t.Errorf("%s %s: verdict %s, want B or both", x.Rule, x.Operation, x.Verdict)
		}
		if x.Verdict == diff.SideB {
			named++
		}
		for _, s := range x.Steps {
			if s.A.Answer == "200 success" || s.B.Answer == "200 success" {
				t.Errorf("read-only sent a request that was accepted: %s", s.Op)
			}
		}
	}
	if named == 0 {
		t.Errorf("no difference where the rule table sides with production:\n%s", out)
	}
}

// TestDiffPreflight: a target that is not there, or that refuses the
// fleet's credentials, is a set-up error (exit 2) naming the side.
func TestDiffPreflight(t *testing.T) {
	a := deviantSim(t, "")
	code, _, errs := diffRun(t, "--target", a, "--target", "http://127.0.0.1:1", "--operations", "10", "--report-dir", t.TempDir())
	if code != report.ExitConfig || !strings.Contains(errs, "B: --target") {
		t.Errorf("unreachable B: exit %d\n%s", code, errs)
	}
	other := filepath.Join(t.TempDir(), "fleet.yaml")
	b, err := os.ReadFile("../../fixtures/demo-fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(other, bytes.Replace(b, []byte("demo-secret"), []byte("wrong-secret"), 1), 0o644)
	code, _, errs = diffRun(t, "--target", a, "--target", a, "--fleet-a", "../../fixtures/demo-fleet.yaml", "--fleet-b", other, "--operations", "10", "--report-dir", t.TempDir())
	if code != report.ExitConfig || !strings.Contains(errs, "pre-flight: B") || !strings.Contains(errs, "credentials") || strings.Contains(errs, "demo-key") {
		t.Errorf("B's credentials refused: exit %d\n%s", code, errs)
	}
	for _, args := range [][]string{{"--target", a}, {"--target", a, "--target", a, "--read-only", "--calibrate"}, {"--target", a, "--target", a, "--fleet", "x", "--fleet-a", "y"}} {
		if code, _, errs := diffRun(t, args...); code != report.ExitConfig {
			t.Errorf("%v: exit %d\n%s", args, code, errs)
		}
	}
}

// TestDiffGwsimAgainstAService: gwsim with a vendor's fleet against the
// vendor's service (here the independent implementation written from the
// two texts, its reads on a port of their own, no reset): the faithful
// service behaves as gwsim does; one that keeps an enumerated value as
// sent, or the old name after a rename, differs in the state its observer
// shows, shrunk, and the rule table agrees with gwsim (A).
func TestDiffGwsimAgainstAService(t *testing.T) {
	simtest.Heavy(t)
	fleetFile := indepFleetFile(t, indepKey, indepSecret)
	f, err := fleet.Load(fleetFile)
	if err != nil {
		t.Fatal(err)
	}
	sim := simulator.New(simulator.Options{Fleet: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	gw := httptest.NewServer(sim.Server.Handler())
	t.Cleanup(gw.Close)
	for _, tc := range []struct {
		name string
		dev  indepDeviation
		key  string // the state key the difference names; "" for none
	}{
		{"faithful", indepDeviation{}, ""},
		{"stores enumerated values as sent", indepDeviation{storeAsSent: true}, "state"},
		{"keeps the old name", indepDeviation{renameKeepsOld: true}, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api, reads := newIndepTarget(tc.dev).serve(t)
			dir := t.TempDir()
			code, out, errs := diffRun(t, "--target", gw.URL, "--target", api, "--observer-b", reads, "--fleet", fleetFile, "--operations", "3000", "--seed", "8", "--report-dir", dir)
			if tc.key == "" {
				// Faithful: nothing differs but where the texts leave the
				// choice (the field a 415 names: gwsim names
				// Content-Type, this service none), each side allowed.
				if code == report.ExitPass {
					return
				}
				rep, err := diff.ReadFile(filepath.Join(dir, diff.JSONName))
				if err != nil || code != report.ExitFail {
					t.Fatalf("exit %d (%v)\n%s\n%s", code, err, out, errs)
				}
				for _, x := range rep.Differences {
					if x.Verdict != diff.BothSides {
						t.Errorf("faithful: %s %s %s: verdict %s\n%s", x.Rule, x.Operation, x.Kind, x.Verdict, out)
					}
				}
				return
			}
			if code != report.ExitFail {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
			}
			rep, err := diff.ReadFile(filepath.Join(dir, diff.JSONName))
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, x := range rep.Differences {
				if x.Kind == "state" && x.Verdict == diff.SideA && (tc.key == "state" || strings.Contains(x.Key, tc.key)) && len(x.Ops) <= 4 {
					found = true
				}
				if x.Verdict == diff.SideB || x.Verdict == diff.Neither {
					t.Errorf("%s %s: verdict %s against gwsim", x.Rule, x.Kind, x.Verdict)
				}
			}
			if !found {
				t.Errorf("no state difference, shrunk, with the rule table on gwsim's side:\n%s", out)
			}
			t.Logf("%s", out)
		})
	}
}

// TestDiffFindsEachDeviation (make test-heavy): gwsim against gwsim
// carrying each deviation of the mutation catalog, 4,000 operations each.
// Every deviation is found (within 60 s of the start), and every
// difference says the rule table agrees with A (gwsim), or calls the form
// open (both), or could not judge the state (not judged); never B or
// neither. One deviation is found before any operation is compared: B
// refuses the credentials of an account of the fleet, which diff's
// pre-flight checks for each side (exit 2 naming B), as docs/diff.md says.
func TestDiffFindsEachDeviation(t *testing.T) {
	simtest.Heavy(t)
	atPreflight := map[string]bool{"refuses-other-account-own-key": true}
	// Bugs in forms only the grammars' generators make (gatewayapi/oracle:
	// JSON numbers and text, XML documents, HTTP methods, sign inputs and
	// positions): gwconform run sends those forms (TestMutationScore);
	// diff's operations carry fields and values, not such bodies.
	byRunOnly := map[string]bool{"accepts-json-number-syntax": true, "accepts-bare-doctype": true, "uses-last-duplicate-element": true,
		"accepts-sign-without-timestamp": true, "accepts-sign-without-secret": true, "compares-sign-prefix": true, "accepts-unlisted-methods": true}
	for _, d := range rules.Deviations() {
		// HTTP's own rules (kind transport) are broken by a server of
		// its own that writes each answer's bytes (wiredouble_test.go);
		// diff's operations go through one HTTP client, and gwconform
		// run's http.* checks find those (TestWireDoubles).
		if _, ok := deviations[d.ID]; !ok || byRunOnly[d.ID] || d.Kind == "transport" {
			continue
		}
		t.Run(d.ID, func(t *testing.T) {
			dir := t.TempDir()
			code, out, errs := diffRun(t, "--target", deviantSim(t, ""), "--target", deviantSim(t, d.ID), "--operations", "4000", "--seed", "21", "--shrink-time", "5s", "--report-dir", dir)
			if atPreflight[d.ID] {
				if code != report.ExitConfig || !strings.Contains(errs, "pre-flight: B") {
					t.Errorf("%s: exit %d, want 2 with the pre-flight naming B\n%s\n%s", d.ID, code, out, errs)
				}
				return
			}
			if code != report.ExitFail {
				t.Fatalf("%s (%s): exit %d, want 1: not found\n%s\n%s", d.ID, d.Rule, code, out, errs)
			}
			rep, err := diff.ReadFile(filepath.Join(dir, diff.JSONName))
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Differences) == 0 {
				t.Fatalf("%s (%s): no difference found\n%s", d.ID, d.Rule, out)
			}
			first := time.Duration(1 << 62)
			for _, x := range rep.Differences {
				if x.Verdict != diff.SideA && x.Verdict != diff.BothSides && x.Verdict != diff.NotJudged {
					t.Errorf("%s: %s %s %s: the rule table agrees with %s, want A (gwsim)\n%s", d.ID, x.Rule, x.Operation, x.Kind, x.Verdict, out)
				}
				if after, err := time.ParseDuration(x.FoundAfter); err == nil && after < first {
					first = after
				}
			}
			if first > 60*time.Second {
				t.Errorf("%s: first found after %s, want within 60 s", d.ID, first)
			}
			// The wire forms put credentials in other places (an
			// attribute, a near miss, another field name): still none in
			// any report.
			files, _ := os.ReadDir(dir)
			for _, f := range files {
				b, _ := os.ReadFile(filepath.Join(dir, f.Name()))
				for _, k := range []string{"demo-key", "other-key", "demo-secret", "other-secret", "DEMO-KEY"} {
					if bytes.Contains(b, []byte(k)) {
						t.Errorf("%s: %s carries %q", d.ID, f.Name(), k)
					}
				}
			}
			t.Logf("%s (%s): %d difference(s), first %s %s, agrees with %s, shrunk to %d operation(s), found after %s", d.ID, d.Rule,
				len(rep.Differences), rep.Differences[0].Rule, rep.Differences[0].Kind, rep.Differences[0].Verdict, len(rep.Differences[0].Ops), first)
		})
	}
}

// TestDiffTwoFleets: A and B with fleets of one shape but their own keys,
// secrets, gateways and serial numbers (--fleet-a, --fleet-b): each
// operation on A's n-th device goes to B's n-th; no difference.
func TestDiffTwoFleets(t *testing.T) {
	demo, err := os.ReadFile("../../fixtures/demo-fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	other := strings.NewReplacer("demo-key", "vendor-key", "demo-secret", "vendor-secret", "a4c138f0e2b1", "0c0ffee0c0de",
		"0123456789abcdef0123456789abcd0", "feedfacefeedfacefeedfacefeedfac").Replace(string(demo))
	dir := t.TempDir()
	fa, fb := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	os.WriteFile(fa, demo, 0o644)
	os.WriteFile(fb, []byte(other), 0o644)
	f, err := fleet.Load(fb)
	if err != nil {
		t.Fatal(err)
	}
	simB := httptest.NewServer(simulator.New(simulator.Options{Fleet: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Server.Handler())
	t.Cleanup(simB.Close)
	code, out, errs := diffRun(t, "--target", deviantSim(t, ""), "--target", simB.URL, "--fleet-a", fa, "--fleet-b", fb, "--operations", "600", "--seed", "4", "--report-dir", t.TempDir())
	if code != report.ExitPass {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, errs)
	}
	// A fleet of another shape is refused.
	os.WriteFile(fb, []byte(strings.Replace(other, "type: Light Dimmer, name: Hall, state: {dimming: 40}", "type: Relay Module, name: Hall, state: {io: \"On\"}", 1)), 0o644)
	if code, _, errs := diffRun(t, "--target", deviantSim(t, ""), "--target", simB.URL, "--fleet-a", fa, "--fleet-b", fb, "--operations", "10", "--report-dir", t.TempDir()); code != report.ExitConfig || !strings.Contains(errs, "shape") {
		t.Errorf("fleets of two shapes: exit %d\n%s", code, errs)
	}
}

// TestDiffOpenFormsBothReadings: gwsim against a service where the texts
// leave a form open, shown on gwsim itself: `gwsim serve --open-forms
// refuse` (A) against `gwsim serve --open-forms accept` (B), two processes
// on the same fleet, with --probe-open. They differ only in how they read
// the open forms, so differences are found (exit 1, "differences") and
// every one, in the answer and in the state that follows it, says the
// rule table allows both readings; none is A, B, neither or not judged.
// Each is shrunk to the one open-form request, which A refuses.
func TestDiffOpenFormsBothReadings(t *testing.T) {
	t.Parallel()
	refuse := simtest.Serve(t, bins.gwsim, "--open-forms", "refuse")
	accept := simtest.Serve(t, bins.gwsim, "--open-forms", "accept")
	dir := t.TempDir()
	code, out, errs := diffRun(t, "--target", refuse.URL, "--target", accept.URL, "--probe-open", "--operations", "600", "--seed", "2",
		"--shrink-time", "3s", "--report-dir", dir)
	if code != report.ExitFail {
		t.Fatalf("exit %d, want 1 (differences)\n%s\n%s", code, out, errs)
	}
	rep, err := diff.ReadFile(filepath.Join(dir, diff.JSONName))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.ProbeOpen || !strings.Contains(out, "open forms probed") {
		t.Errorf("diff.json (probe_open %v) or the console does not say the open forms were probed:\n%s", rep.ProbeOpen, out)
	}
	kinds := map[string]bool{}
	for _, x := range rep.Differences {
		kinds[x.Kind] = true
		if x.Verdict != diff.BothSides {
			t.Errorf("%s %s %s: verdict %s (%s), want both: the two readings of an open form are each allowed", x.Rule, x.Operation, x.Kind, x.Verdict, x.VerdictWhy)
			continue
		}
		if !strings.Contains(x.VerdictWhy, "Open form") {
			t.Errorf("%s %s %s: the verdict does not say why: %q", x.Rule, x.Operation, x.Kind, x.VerdictWhy)
		}
		if len(x.Ops) != 1 || !x.Reproducible || !strings.HasSuffix(x.Ops[0].Note, "(open)") {
			t.Errorf("%s %s %s: want shrunk to the one open-form request, got %d ops %v (reproducible %v)", x.Rule, x.Operation, x.Kind, len(x.Ops), x.Ops, x.Reproducible)
		}
		if x.Kind == "answer" && (x.A.Answer == "200 success" || x.B.Answer != "200 success") {
			t.Errorf("%s %s: A (refuse) answered %q, B (accept) %q", x.Rule, x.Operation, x.A.Answer, x.B.Answer)
		}
	}
	if !kinds["answer"] || !kinds["state"] {
		t.Errorf("want differences both in answers and in the state that follows:\n%s", out)
	}
	if !strings.Contains(out, "DIFFERENT") || !strings.Contains(out, "agrees with: both") {
		t.Errorf("the console does not show the differences and their verdicts:\n%s", out)
	}
	t.Logf("%s", out)
}
