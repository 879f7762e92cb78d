package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/explore"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

var enumValue = regexp.MustCompile(`"(io|Relay1|Relay2|mode|fan)":"([^"]*)"|<(io|Relay1|Relay2|mode|fan)>([^<]*)<`)

// refusesLowerCaseEnums is gwsim behind a proxy that refuses a command
// whose On/Off/Auto/Cool/Heat is not in the published case: CONTRACT 2
// allows any case, the published table gives one; a SHOULD deviation. It
// looks before the credentials, gateway and device, so a request wrong in
// those ways too gets its invalid_field: SHOULD disagreements on the
// CONTRACT's codes as well.
func refusesLowerCaseEnums(t *testing.T) string {
	return faulty(t, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		for _, m := range enumValue.FindAllSubmatch(body, -1) {
			field, v := string(m[1])+string(m[3]), string(m[2])+string(m[4])
			if isEnum(v) && !strings.Contains(canonicalEnu, v) {
				xmlBody := strings.Contains(r.Header.Get("Content-Type"), "xml")
				if xmlBody {
					w.Header().Set("Content-Type", "application/xml")
					w.WriteHeader(400)
					io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><xml><status>error</status><error><code>invalid_field</code><field>`+field+`</field><message>not a value</message></error></xml>`)
					return true
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(400)
				io.WriteString(w, `{"status":"error","error":{"code":"invalid_field","field":"`+field+`","message":"not a value"}}`)
				return true
			}
		}
		return false
	})
}

func readExplore(t *testing.T, dir string) *explore.File {
	t.Helper()
	ef, err := explore.ReadFile(filepath.Join(dir, explore.JSONName))
	if err != nil {
		t.Fatal(err)
	}
	return ef
}

// noKeyInReports: no report file carries a fleet api_key whole.
func noKeyInReports(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, k := range []string{"demo-key", "other-key", "demo-secret", "other-secret"} {
			if strings.Contains(string(b), k) {
				t.Errorf("%s carries %q", filepath.Base(f), k)
			}
		}
	}
}

// TestExploreGoesPastShouldDisagreements: against a target that deviates
// from a CONTRACT reading only, explore at --fail-on must runs its whole
// budget, lists the disagreement once with its level, rule, sentence and
// count and writes its reproduction, and passes; --fail-on should stops
// at it and fails; --skip leaves it out; a baseline entry makes it known.
func TestExploreGoesPastShouldDisagreements(t *testing.T) {
	simtest.Heavy(t)
	url := refusesLowerCaseEnums(t)

	dir := t.TempDir()
	code, out, errs := exploreRun(t, "--target", url, "--operations", "1500", "--seed", "3", "--report-dir", dir, "--shrink-time", "10s")
	if code != report.ExitPass {
		t.Fatalf("--fail-on must: exit %d, want 0\n%s\n%s", code, out, errs)
	}
	ef := readExplore(t, dir)
	if ef.Operations != 1500 || ef.Found != nil || len(ef.Findings) == 0 {
		t.Fatalf("want the whole budget and listed findings: %d operations, found %v, %d findings\n%s", ef.Operations, ef.Found, len(ef.Findings), out)
	}
	var f *explore.Finding
	seen := map[string]bool{}
	for _, g := range ef.Findings {
		if g.Level != "SHOULD" || g.Quote == "" || g.Script == "" || g.Count < 1 {
			t.Errorf("finding %s %s: quote %q, script %q, count %d", g.Level, g.Rule, g.Quote, g.Script, g.Count)
		}
		key := g.Rule + g.Disagreement.Expected + g.Disagreement.Got
		if seen[key] {
			t.Errorf("listed twice: %s %s", g.Rule, g.Disagreement.Why)
		}
		seen[key] = true
		if _, err := os.Stat(filepath.Join(dir, g.Script)); err != nil {
			t.Errorf("no reproduction for a listed finding: %v", err)
		}
		if g.Rule == "C-2.enum-case" && g.Disagreement.Expected == "200 success" && f == nil {
			f = g
		}
	}
	if f == nil || !strings.Contains(f.Quote, "any letter case") || f.Count < 2 || len(f.Ops) > 3 {
		t.Fatalf("no valid lower-case command refused, shrunk, counted: %+v\n%s", f, out)
	}
	if !strings.Contains(out, "SHOULD C-2.enum-case") || !strings.Contains(out, "PASS at --fail-on must") {
		t.Errorf("the console does not list the finding and the verdict:\n%s", out)
	}
	noKeyInReports(t, dir)
	t.Logf("%s", out)

	// --fail-on should: stops at it, fails, explore-repro.sh reproduces it.
	dir = t.TempDir()
	code, out, errs = exploreRun(t, "--target", url, "--operations", "1500", "--seed", "3", "--fail-on", "should", "--report-dir", dir)
	if code != report.ExitFail {
		t.Fatalf("--fail-on should: exit %d, want 1\n%s\n%s", code, out, errs)
	}
	if ef := readExplore(t, dir); ef.Found == nil || ef.Found.Level != "SHOULD" || ef.Operations >= 1500 {
		t.Errorf("--fail-on should: found %+v after %d operations", ef.Found, ef.Operations)
	}

	// --skip: left out, counted.
	dir = t.TempDir()
	code, out, errs = exploreRun(t, "--target", url, "--operations", "800", "--seed", "3", "--fail-on", "should", "--skip", "C-*", "--report-dir", dir)
	if code != report.ExitPass {
		t.Fatalf("--skip: exit %d, want 0\n%s\n%s", code, out, errs)
	}
	if ef := readExplore(t, dir); len(ef.Findings) != 0 || ef.Skipped["C-2.enum-case"] == 0 || ef.Operations != 800 {
		t.Errorf("--skip: findings %d, skipped %v", len(ef.Findings), ef.Skipped)
	}

	// --baseline: known, listed, passing even at --fail-on should.
	bl := filepath.Join(t.TempDir(), "baseline.yaml")
	exp := time.Now().AddDate(0, 0, 30).Format("2006-01-02")
	os.WriteFile(bl, []byte("entries:\n  - check: C-*\n    reason: enum case fixed in 2.1\n    owner: qa\n    expires: "+exp+"\n"), 0o644)
	dir = t.TempDir()
	code, out, errs = exploreRun(t, "--target", url, "--operations", "800", "--seed", "3", "--fail-on", "should", "--baseline", bl, "--report-dir", dir)
	if code != report.ExitPass {
		t.Fatalf("--baseline: exit %d, want 0\n%s\n%s", code, out, errs)
	}
	ef = readExplore(t, dir)
	if len(ef.Findings) == 0 || ef.Found != nil {
		t.Fatalf("--baseline: found %v, %d findings", ef.Found, len(ef.Findings))
	}
	for _, g := range ef.Findings {
		if !strings.Contains(g.Known, "enum case fixed") {
			t.Errorf("--baseline: %s %s not known", g.Level, g.Rule)
		}
	}
}

// TestExploreConcurrentFindingHasReproduction: with --clients 4 an answer
// disagreement gets explore-repro.sh with a curl line per request.
func TestExploreConcurrentFindingHasReproduction(t *testing.T) {
	url := refusesLowerCaseEnums(t)
	dir := t.TempDir()
	code, out, errs := exploreRun(t, "--target", url, "--operations", "1000", "--seed", "5", "--clients", "4", "--fail-on", "should", "--report-dir", dir)
	if code != report.ExitFail {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, explore.ScriptName))
	if err != nil || strings.Count(string(b), "curl ") == 0 {
		t.Fatalf("no reproduction of a concurrent finding: %v\n%s", err, b)
	}
	noKeyInReports(t, dir)
}

// TestExplorePutsDevicesBack: a device renamed before the run has that
// name and state again after it (the run resets the simulator to its fleet
// and changes devices); with --no-restore it does not.
func TestExplorePutsDevicesBack(t *testing.T) {
	t.Parallel()
	url := faulty(t, func(http.ResponseWriter, *http.Request, []byte) bool { return false })
	f := fleet.Demo()
	tg, err := explore.NewTarget(url, f, nil, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	w, _ := explore.NewWorld(f)
	a := w.Accounts[0]
	g := a.Gateways[0]
	d := g.Devices[0]
	read := func() (string, map[string]any) {
		resp, err := http.Get(url + "/_sim/gateways/" + g.MAC + "/devices/" + d.SN)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct {
			Name  string         `json:"name"`
			State map[string]any `json:"state"`
		}
		json.NewDecoder(resp.Body).Decode(&v)
		return v.Name, v.State
	}
	for _, format := range []string{"json", "xml"} {
		name := "Before explore " + format
		r := tg.Do(context.Background(), explore.Op{Kind: explore.Rename, Format: format, Account: a.ID, Key: a.Key, MAC: g.MAC, SN: d.SN, Fields: []explore.KV{{Key: "name", Value: name}}})
		if !r.Answer.Success {
			t.Fatalf("rename: %+v", r)
		}
		_, before := read()
		code, out, errs := exploreRun(t, "--target", url, "--operations", "300", "--seed", "4", "--report-dir", t.TempDir())
		if code != report.ExitPass {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		gotName, after := read()
		if gotName != name || !sameState(before, after) {
			t.Errorf("after the run: %q %v, want %q %v\n%s", gotName, after, name, before, errs)
		}
		if !strings.Contains(errs, "put back") {
			t.Errorf("the console does not say the devices were put back:\n%s", errs)
		}
	}
	code, out, errs := exploreRun(t, "--target", url, "--operations", "300", "--seed", "4", "--no-restore", "--report-dir", t.TempDir())
	if code != report.ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if gotName, _ := read(); strings.HasPrefix(gotName, "Before explore") {
		t.Errorf("--no-restore put the name back: %q", gotName)
	}
}

func sameState(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
