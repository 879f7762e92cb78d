package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/bundle"
	"github.com/gwdmi/gwtools/conformance/engine"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// signInBody finds a sign value of 32 hex characters in a JSON or XML body,
// raw or escaped inside a report.
var signInBody = regexp.MustCompile(`(?i)sign(\\?"|&#34;|&quot;)?\s*(:|>|&gt;)\s*(\\?"|&#34;|&quot;)?[0-9a-f]{32}`)

// TestReportsCarryNoSignAndCurlLinesSignAfresh: no report holds a sign or
// a secret, and the curl line of a failed check, pasted later with a body
// whose timestamp is long stale, still gets the answer the check got,
// because it pipes the body through `gwconform sign`.
func TestReportsCarryNoSignAndCurlLinesSignAfresh(t *testing.T) {
	t.Parallel()
	url := acceptsDimming101(t)
	r := gwconform(t, "--target", url, "--allow-partial", "--check", "command.light-dimmer.*")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (the deviation fails)\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	for _, name := range []string{"report.json", "junit.xml", "report.html"} {
		b, err := os.ReadFile(filepath.Join(r.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if m := signInBody.Find(b); m != nil {
			t.Errorf("%s carries a sign: %s", name, m)
		}
		if bytes.Contains(b, []byte("demo-secret")) {
			t.Errorf("%s carries the fleet's secret", name)
		}
	}
	// The curl lines are on the failure cards of report.html (report.json
	// has the exchanges they are made of).
	page, _ := os.ReadFile(filepath.Join(r.dir, "report.html"))
	type result struct {
		ID   string
		Curl []string
	}
	var doc struct{ Results []result }
	for _, id := range []string{"command.light-dimmer.dimming.101.json", "command.light-dimmer.dimming.101.xml"} {
		card := regexp.MustCompile(`(?s)<section class="failure[^"]*" id="c-` + regexp.QuoteMeta(id) + `">.*?</section>`).Find(page)
		res := result{ID: id}
		for _, m := range regexp.MustCompile(`(?s)<h5>curl</h5><pre>(.*?)</pre>`).FindAllSubmatch(card, -1) {
			res.Curl = append(res.Curl, html.UnescapeString(string(m[1])))
		}
		doc.Results = append(doc.Results, res)
	}
	path := filepath.Dir(bins.gwconform) + string(os.PathListSeparator) + os.Getenv("PATH")
	curlPath, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed")
	}
	curlOnly := t.TempDir()
	if err := os.Symlink(curlPath, filepath.Join(curlOnly, "curl")); err != nil {
		t.Fatal(err)
	}
	stale := regexp.MustCompile(`(timestamp(?:":"|>))\d{14}`)
	tried := map[string]bool{}
	for _, res := range doc.Results {
		if res.ID != "command.light-dimmer.dimming.101.json" && res.ID != "command.light-dimmer.dimming.101.xml" || len(res.Curl) == 0 {
			continue
		}
		line := res.Curl[0]
		if !strings.Contains(line, "gwconform sign") {
			t.Fatalf("%s: the curl line does not sign afresh: %s", res.ID, line)
		}
		// As if pasted a day later: the recorded timestamp is stale.
		line = stale.ReplaceAllString(line, "${1}20200101000000")
		cmd := exec.Command("bash", "-c", line)
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s\n%s", res.ID, err, line, out)
		}
		// The target accepts dimming 101: the failure is reproduced.
		if !strings.Contains(string(out), "200 OK") || !strings.Contains(string(out), "success") {
			t.Errorf("%s: the pasted curl line did not reproduce the failure:\n%s\n%s", res.ID, line, out)
		}
		// Where gwconform is not on the PATH (curl is), the line sends
		// nothing and says in one line how to get it.
		cmd = exec.Command("bash", "-c", line)
		cmd.Env = append(os.Environ(), "PATH="+curlOnly)
		out, err = cmd.CombinedOutput()
		if err == nil || strings.Count(string(out), "\n") != 1 || !strings.Contains(string(out), "go install github.com/gwdmi/gwtools/cmd/gwconform@latest") || strings.Contains(string(out), "HTTP/") {
			t.Errorf("%s without gwconform on the PATH: %v, want a failure and one line saying how to get it:\n%s", res.ID, err, out)
		}
		tried[res.ID] = true
	}
	if len(tried) != 2 {
		t.Fatalf("curl lines tried for %v; want the JSON and XML failures", tried)
	}

	// The reports show each api_key masked, unless --report-credentials.
	for _, name := range []string{"report.json", "junit.xml", "report.html"} {
		b, _ := os.ReadFile(filepath.Join(r.dir, name))
		if bytes.Contains(b, []byte("demo-key")) || !bytes.Contains(b, []byte("demo…")) {
			t.Errorf("%s does not mask the api_key as demo…", name)
		}
	}
	whole := gwconform(t, "--target", url, "--allow-partial", "--check", "command.light-dimmer.dimming.101.json", "--report-credentials")
	b, _ := os.ReadFile(filepath.Join(whole.dir, "report.json"))
	if !bytes.Contains(b, []byte(`\"api_key\":\"demo-key\"`)) || bytes.Contains(b, []byte("demo-secret")) || signInBody.Match(b) {
		t.Errorf("with --report-credentials, report.json does not show the api_key whole, or shows a secret or sign")
	}
}

// TestShedding429IsCertifiedWithoutFalseFailure: a target that answers
// every fifth request 429 with Retry-After, as a shared staging shedding
// load does, passes; the retries are waited out, not blamed.
func TestShedding429IsCertifiedWithoutFalseFailure(t *testing.T) {
	simtest.Heavy(t)
	var n atomic.Int64
	url := faulty(t, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if n.Add(1)%5 != 0 {
			return false
		}
		w.Header().Set("Retry-After", "0")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"status":"error","error":{"code":"rate_limited","message":"slow down"}}`))
		return true
	})
	r := gwconform(t, "--target", url, "--fail-on", "should", "--allow-partial", "--ginkgo.label-filter", "!sim")
	if r.code != 0 {
		t.Fatalf("exit %d: a shedding target got a false failure\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	if n.Load() < 100 {
		t.Fatalf("only %d requests reached the target", n.Load())
	}
}

// bundleFiles reads a bundle's files.
func bundleFiles(t *testing.T, path string) map[string][]byte {
	t.Helper()
	files, err := bundle.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// rewrite writes files as a bundle at a new path; with rehash, the
// manifest's hashes are made to match again, as a careful forger would.
func rewrite(t *testing.T, files map[string][]byte, rehash bool) string {
	t.Helper()
	if rehash {
		var m map[string]any
		if err := json.Unmarshal(files[bundle.ManifestFile], &m); err != nil {
			t.Fatal(err)
		}
		hashes := map[string]any{}
		for name, b := range files {
			if name != bundle.ManifestFile {
				h := sha256.Sum256(b)
				hashes[name] = hex.EncodeToString(h[:])
			}
		}
		m["files"] = hashes
		m["fleet_sha256"] = hashes[bundle.FleetFile]
		files[bundle.ManifestFile], _ = json.Marshal(m)
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, b := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
		tw.Write(b)
	}
	tw.Close()
	gz.Close()
	path := filepath.Join(t.TempDir(), "forged.tar.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func verify(t *testing.T, path string, flags ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bins.gwconform, append([]string{"verify", path}, flags...)...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

// editJSON changes report.json or the manifest through a function.
func editJSON(t *testing.T, b []byte, edit func(map[string]any)) []byte {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	edit(v)
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBundleVerifiesAndEveryTamperingFails: a certified run's bundle
// verifies; editing a result, dropping a check, changing a hash or the
// catalog version is each caught, even when the forger fixes the hashes.
func TestBundleVerifiesAndEveryTamperingFails(t *testing.T) {
	simtest.Heavy(t)
	path := filepath.Join(t.TempDir(), "cert.tar.gz")
	r := gwconform(t, "--bundle", path, "--mode", "certified", "--product", "Acme Hub", "--product-version", "2.1")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	if code, out := verify(t, path, "--integrity-only"); code != 0 || !strings.Contains(out, "unsigned: integrity only") || !strings.Contains(out, "certified run of Acme Hub 2.1") {
		t.Fatalf("the genuine bundle: exit %d\n%s", code, out)
	}
	files := bundleFiles(t, path)
	for name, b := range files {
		if bytes.Contains(b, []byte("demo-secret")) || bytes.Contains(b, []byte("demo-key")) || signInBody.Match(b) {
			t.Errorf("%s carries a credential", name)
		}
	}
	var manifest struct {
		Mode    string `json:"mode"`
		Catalog struct{ Version, Hash string }
		Sources map[string]string `json:"sources"`
	}
	json.Unmarshal(files[bundle.ManifestFile], &manifest)
	if manifest.Mode != "certified" || manifest.Catalog.Hash == "" || len(manifest.Sources["interface_sha256"]) != 64 {
		t.Errorf("manifest: %s", files[bundle.ManifestFile])
	}

	// firstPassed is a passed MUST check of report.json, for the forger
	// to edit: taken out of "passed" (which lists the checks that passed
	// with nothing more to say, by level and ID) into a result of its own.
	firstPassed := func(v map[string]any) map[string]any {
		passed, _ := v["passed"].(map[string]any)
		must, _ := passed["MUST"].(map[string]any)
		for id, ms := range must {
			delete(must, id)
			res := map[string]any{"id": id, "level": "MUST", "outcome": "passed", "duration_ms": ms}
			v["results"] = append(v["results"].([]any), res)
			return res
		}
		t.Fatal("no passed MUST check")
		return nil
	}
	cases := []struct {
		name   string
		forge  func(files map[string][]byte)
		rehash bool
		want   string
	}{
		{"a result edited", func(f map[string][]byte) {
			f[report.JSONFile] = editJSON(t, f[report.JSONFile], func(v map[string]any) { firstPassed(v)["outcome"] = "failed" })
		}, false, "changed after the run"},
		{"a result edited, hashes fixed", func(f map[string][]byte) {
			f[report.JSONFile] = editJSON(t, f[report.JSONFile], func(v map[string]any) { firstPassed(v)["outcome"] = "failed" })
		}, true, "do not follow from its results"},
		{"a check dropped, hashes fixed", func(f map[string][]byte) {
			f[report.JSONFile] = editJSON(t, f[report.JSONFile], func(v map[string]any) {
				res := v["results"].([]any)
				v["results"] = res[1:]
			})
		}, true, "have no result"},
		{"a hash changed", func(f map[string][]byte) {
			f[bundle.ManifestFile] = editJSON(t, f[bundle.ManifestFile], func(v map[string]any) {
				v["files"].(map[string]any)[report.JUnitFile] = strings.Repeat("0", 64)
			})
		}, false, "junit.xml has SHA-256"},
		{"the catalog version changed", func(f map[string][]byte) {
			f[bundle.ManifestFile] = editJSON(t, f[bundle.ManifestFile], func(v map[string]any) {
				v["catalog"].(map[string]any)["version"] = "1999.1.1"
			})
		}, false, "judged by catalog 1999.1.1"},
		{"a file added", func(f map[string][]byte) { f["extra.txt"] = []byte("hello") }, false, "not in the manifest"},
		{"the verdict edited, hashes fixed", func(f map[string][]byte) {
			f[report.JSONFile] = editJSON(t, f[report.JSONFile], func(v map[string]any) { v["verdict"] = "FAIL" })
		}, true, "but its results give PASS"},
		{"an unedited baseline added, hashes fixed", func(f map[string][]byte) {
			f[bundle.BaselineFile] = []byte("entries:\n  - {check: probe.device_id-alias.json, reason: \"TODO: why\", owner: TODO, expires: 2026-01-01}\n")
		}, true, "baseline.yaml would not be accepted: baseline: entries[0].reason: still TODO"},
		{"a MUST failure excused, hashes fixed", func(f map[string][]byte) {
			f[report.JSONFile] = editJSON(t, f[report.JSONFile], func(v map[string]any) { firstPassed(v)["outcome"] = "expected_failure" })
		}, true, "a certified run excuses no MUST failure; the baseline excused"},
	}
	for _, tc := range cases {
		forged := map[string][]byte{}
		for k, v := range bundleFiles(t, path) {
			forged[k] = v
		}
		tc.forge(forged)
		code, out := verify(t, rewrite(t, forged, tc.rehash), "--integrity-only")
		if code != 1 || !strings.Contains(out, tc.want) || !strings.Contains(out, "NOT VERIFIED") {
			t.Errorf("%s: exit %d, want 1 and %q:\n%s", tc.name, code, tc.want, out)
		}
	}
}

// TestCertifiedModeRefusesWhatIsNotACertification: focus, label filters,
// --allow-partial and a fleet without a second gateway or account or a
// device type are refused up front, with exit 2 and the reason.
func TestCertifiedModeRefusesWhatIsNotACertification(t *testing.T) {
	t.Parallel()
	partial := filepath.Join(t.TempDir(), "dimmer-only.yaml")
	os.WriteFile(partial, []byte(`accounts:
  - myservice_id: 5f3a9c0e1b2d4f6a8c0e1b2d
    api_keys: [{api_key: demo-key, secret: demo-secret}]
    gateways:
      - mac: a4c138f0e2b1
        devices: [{sn: 0123456789abcdef0123456789abcd06, type: Light Dimmer}]
`), 0o600)
	cert := []string{"--bundle", filepath.Join(t.TempDir(), "b.tar.gz"), "--mode", "certified", "--product", "P", "--product-version", "1"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--ginkgo.focus", "dimming"}, "drop --ginkgo.focus"},
		{[]string{"--ginkgo.label-filter", "level:MUST"}, "drop --ginkgo.label-filter"},
		{[]string{"--allow-partial"}, "drop --allow-partial"},
		{[]string{"--fleet", partial}, "has no Appliance Module"},
		{[]string{"--fleet", partial}, "no second account"},
		{[]string{"--fleet", partial}, "no second gateway"},
	}
	for _, tc := range cases {
		r := gwconform(t, append(append([]string{}, cert...), tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 and %q\n%s", tc.args, r.code, tc.want, r.stderr)
		}
	}
	r := gwconform(t, "--mode", "certified", "--product", "P", "--product-version", "1")
	if r.code != 2 || !strings.Contains(r.stderr, "--bundle") {
		t.Errorf("certified without --bundle: exit %d\n%s", r.code, r.stderr)
	}
}

// acceptsDimming101 is a target that accepts a dimming of 101, above the
// published range, and is faithful otherwise.
func acceptsDimming101(t *testing.T) string {
	return faulty(t, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if !regexp.MustCompile(`"dimming":"101"|<dimming>101</dimming>`).Match(body) {
			return false
		}
		success(w, r)
		return true
	})
}

func command(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bins.gwconform, args...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

// TestBaselineRerunAndReplay: a run's failures become a baseline that lets
// the run pass while it shows them; a baseline that hides a fixed failure,
// an expired entry or one naming no check fails the run; --rerun-failed
// runs exactly the failed checks; replay reproduces a failure against the
// faulty target and sees it fixed against a faithful one.
func TestBaselineRerunAndReplay(t *testing.T) {
	simtest.Heavy(t)
	bad := acceptsDimming101(t)
	first := gwconform(t, "--target", bad)
	if first.code != 1 {
		t.Fatalf("the faulty target: exit %d, want 1\n%s", first.code, tail(first.stdout))
	}
	report := filepath.Join(first.dir, "report.json")
	failedIDs := failed(reports(t, first.dir))
	for _, id := range []string{"command.light-dimmer.dimming.101.json", "command.light-dimmer.dimming.101.xml"} {
		if failedIDs[id] != "MUST" {
			t.Fatalf("%s did not fail: %v", id, failedIDs)
		}
	}

	// A starting baseline from the failures, given reasons and an owner.
	code, out := command(t, "baseline", report)
	if code != 0 || !strings.Contains(out, "command.light-dimmer.dimming.101.json") {
		t.Fatalf("gwconform baseline: exit %d\n%s", code, out)
	}
	// Unedited, it is refused: its entries still say TODO.
	unedited := filepath.Join(t.TempDir(), "unedited.yaml")
	os.WriteFile(unedited, []byte(out), 0o644)
	if r := gwconform(t, "--target", bad, "--baseline", unedited); r.code != 2 || !strings.Contains(r.stderr, "still TODO") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("an unedited baseline: exit %d, want 2 and one line saying TODO\n%s", r.code, r.stderr)
	}
	good := strings.NewReplacer("owner: TODO", "owner: firmware-team", "TODO: ", "accepted above 100 until v2.2: ").Replace(out)
	goodFile := filepath.Join(t.TempDir(), "baseline.yaml")
	os.WriteFile(goodFile, []byte(good), 0o644)
	bundleFile := filepath.Join(t.TempDir(), "b.tar.gz")
	withBaseline := gwconform(t, "--target", bad, "--baseline", goodFile, "--bundle", bundleFile)
	if withBaseline.code != 0 || !strings.Contains(withBaseline.stdout, "Known failures (expected by the baseline)") || !strings.Contains(withBaseline.stdout, "firmware-team") {
		t.Fatalf("with the baseline: exit %d, want 0 and the expected failures shown\n%s\n%s", withBaseline.code, tail(withBaseline.stdout), withBaseline.stderr)
	}
	// Never a plain PASS: in words and in JSON.
	known := len(failedIDs)
	if !strings.Contains(withBaseline.stdout, fmt.Sprintf(": PASS with %d known failures (", known)) {
		t.Errorf("with the baseline, the console does not say PASS with %d known failures:\n%s", known, tail(withBaseline.stdout))
	}
	var withDoc struct {
		Verdict string `json:"verdict"`
		Text    string `json:"verdict_text"`
		Known   int    `json:"known_failures"`
	}
	rb, _ := os.ReadFile(filepath.Join(withBaseline.dir, "report.json"))
	if err := json.Unmarshal(rb, &withDoc); err != nil || withDoc.Verdict != "PASS_WITH_KNOWN_FAILURES" || withDoc.Text != fmt.Sprintf("PASS with %d known failures", known) || withDoc.Known != known {
		t.Errorf("report.json with the baseline: %+v %v", withDoc, err)
	}
	// verify names the known failures.
	if code, out := command(t, "verify", bundleFile, "--integrity-only", "--accept-verdict", "PASS_WITH_KNOWN_FAILURES"); code != 0 || !strings.Contains(out, fmt.Sprintf("verdict PASS with %d known failures", known)) ||
		!strings.Contains(out, fmt.Sprintf("%d known failure(s)", known)) || !strings.Contains(out, "MUST   command.light-dimmer.dimming.101.xml: expected failure (baseline: accepted above 100") {
		t.Errorf("verify of a bundle with known failures: exit %d\n%s", code, out)
	}
	// In a certification a baseline excuses no MUST check: refused before
	// anything is sent.
	var sent atomic.Int64
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sent.Add(1) }))
	defer counting.Close()
	cert := gwconform(t, "--target", counting.URL, "--baseline", goodFile, "--mode", "certified", "--bundle", filepath.Join(t.TempDir(), "c.tar.gz"),
		"--product", "P", "--product-version", "1")
	if cert.code != 2 || !strings.Contains(cert.stderr, "covers 1 MUST check(s)") || strings.Count(cert.stderr, "\n") != 1 || sent.Load() != 0 {
		t.Errorf("certified with a baseline of MUST checks: exit %d, %d requests sent, want 2, none and one line\n%s", cert.code, sent.Load(), cert.stderr)
	}
	far := filepath.Join(t.TempDir(), "far.yaml")
	os.WriteFile(far, []byte("entries:\n  - {check: \"command.light-dimmer.dimming.101.*\", reason: known, owner: me, expires: 2099-01-01}\n"), 0o644)
	if r := gwconform(t, "--target", bad, "--baseline", far); r.code != 2 || !strings.Contains(r.stderr, "more than 90 days away") {
		t.Errorf("an entry expiring in 2099: exit %d, want 2\n%s", r.code, r.stderr)
	}

	// A baseline only shrinks: against the faithful target its entries
	// hide nothing and fail the run; expired and unknown entries too.
	sim := startGwsim(t)
	fixed := gwconform(t, "--target", sim, "--baseline", goodFile)
	if fixed.code != 1 || !strings.Contains(fixed.stdout, "its checks pass now") {
		t.Errorf("a baseline hiding a fixed failure: exit %d, want 1 and a line saying so\n%s", fixed.code, tail(fixed.stdout))
	}
	staleFile := filepath.Join(t.TempDir(), "stale.yaml")
	os.WriteFile(staleFile, []byte(`entries:
  - {check: "command.light-dimmer.dimming.101.*", reason: known, owner: me, expires: 2020-01-01}
  - {check: "no.such.check.*", reason: typo, owner: me, expires: `+time.Now().AddDate(0, 0, 30).Format(time.DateOnly)+`}
`), 0o644)
	stale := gwconform(t, "--target", bad, "--baseline", staleFile)
	if stale.code != 1 || !strings.Contains(stale.stdout, "expired on 2020-01-01") || !strings.Contains(stale.stdout, "names no check") {
		t.Errorf("expired and unknown entries: exit %d\n%s", stale.code, tail(stale.stdout))
	}

	// --rerun-failed runs exactly the checks that failed, with the seed.
	rerun := gwconform(t, "--target", bad, "--rerun-failed", report)
	if rerun.code != 1 {
		t.Errorf("rerun against the same faulty target: exit %d, want 1", rerun.code)
	}
	doc := reports(t, rerun.dir)
	ran := map[string]bool{}
	for _, r := range doc.Results {
		if r.Outcome == "passed" || r.Outcome == "failed" {
			ran[r.ID] = true
		}
	}
	if len(ran) != len(failedIDs) {
		t.Errorf("rerun ran %d checks, want the %d that failed", len(ran), len(failedIDs))
	}
	for id := range failedIDs {
		if !ran[id] {
			t.Errorf("rerun did not run %s", id)
		}
	}
	// A rerun is PARTIAL (filtered): exit 1 as the README says, 0 with
	// --allow-partial.
	if r := gwconform(t, "--target", sim, "--rerun-failed", report); r.code != 1 || !strings.Contains(r.stdout, ": PARTIAL") {
		t.Errorf("rerun against the faithful target: exit %d, want 1 (PARTIAL)\n%s", r.code, tail(r.stdout))
	}
	if r := gwconform(t, "--target", sim, "--rerun-failed", report, "--allow-partial"); r.code != 0 {
		t.Errorf("rerun against the faithful target with --allow-partial: exit %d, want 0\n%s", r.code, tail(r.stdout))
	}

	// replay sends the recorded requests, signed afresh.
	code, out = command(t, "replay", report, "command.light-dimmer.dimming.101.xml", "--target", bad)
	if code != 0 || !strings.Contains(out, "REPRODUCED") || !strings.Contains(out, "< 200 OK") {
		t.Errorf("replay against the faulty target: exit %d\n%s", code, out)
	}
	code, out = command(t, "replay", report, "command.light-dimmer.dimming.101.json", "--target", sim)
	if code != 1 || !strings.Contains(out, "CHANGED") || !strings.Contains(out, "< 400 Bad Request") || !strings.Contains(out, "invalid_field") {
		t.Errorf("replay against the faithful target: exit %d\n%s", code, out)
	}
	if signInBody.MatchString(out) {
		t.Errorf("replay printed a sign:\n%s", out)
	}
}

// TestRunStopsIncompleteOnAFailingTargetOrTheRequestCap: a target that
// starts answering 500 stops the run with verdict INCOMPLETE and the
// reason, instead of failing every check; so does --max-requests. The
// target answers after 8 ms, far enough that a device's checks go in
// batches and the observer is read by several at once; its observer goes
// on answering. None of them goes on sending or reading once the target
// has stopped answering, and no check fails for a read not made.
func TestRunStopsIncompleteOnAFailingTargetOrTheRequestCap(t *testing.T) {
	t.Parallel()
	// The operations' requests and the observer's reads are counted
	// apart: the reads go on answering, and do not count in the row.
	// lateReads are the reads that came once the target had answered
	// MaxSilent 5xx in a row: by then the run has stopped, and reads
	// only what was in flight.
	const failFrom = 200
	var ops, failed, lateReads atomic.Int64
	url := faulty(t, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		time.Sleep(8 * time.Millisecond)
		if strings.HasPrefix(r.URL.Path, "/_sim/") {
			if failed.Load() >= int64(link.MaxSilent) {
				lateReads.Add(1)
			}
			return false
		}
		if ops.Add(1) <= failFrom {
			return false
		}
		w.WriteHeader(http.StatusInternalServerError)
		failed.Add(1)
		return true
	})
	r := gwconform(t, "--target", url, "--skip-preflight")
	doc := reports(t, r.dir)
	if r.code != 1 || doc.Verdict != "INCOMPLETE" || !strings.Contains(r.stdout+r.stderr, "a 5xx to the last 20 requests") {
		t.Errorf("a target that fails: exit %d, verdict %s\n%s", r.code, doc.Verdict, tail(r.stdout))
	}
	for _, res := range doc.Results {
		if res.Outcome == "failed" && strings.Contains(res.Failure, "not read:") {
			t.Errorf("%s failed for a read not made once the target stopped answering: %s", res.ID, res.Failure)
		}
	}
	// After the 200th: those in flight then (their answers may come after
	// the first 500s), MaxSilent refused in a row, and those in flight by
	// then; no more, however far the target. Of the reads, only those
	// already in flight when the run stopped.
	if most := failFrom + link.MaxSilent + 2*engine.DefaultConcurrency; ops.Load() > int64(most) {
		t.Errorf("gwconform sent %d requests to a failing target, at most %d", ops.Load(), most)
	}
	if late := lateReads.Load(); late > int64(engine.DefaultConcurrency) {
		t.Errorf("gwconform read the observer %d times once the run had stopped, at most %d in flight", late, engine.DefaultConcurrency)
	}
	// Nothing was filtered: the checks not reached are said to be so.
	if strings.Contains(r.stdout, "filter") || !strings.Contains(r.stdout, "not reached: the run stopped before them") {
		t.Errorf("a target that fails mid-run: the summary does not give the true reason\n%s", tail(r.stdout))
	}
	sim := startGwsim(t)
	r = gwconform(t, "--target", sim, "--max-requests", "50")
	doc = reports(t, r.dir)
	if r.code != 1 || doc.Verdict != "INCOMPLETE" || !strings.Contains(r.stdout+r.stderr, "--max-requests 50") {
		t.Errorf("--max-requests 50: exit %d, verdict %s\n%s", r.code, doc.Verdict, tail(r.stdout))
	}
}

// TestVerifyNamesShouldAndKnownFailures: gwconform verify of a bundle whose
// run passed with known failures and SHOULD failures names each of them
// and the observer, not only the verdict.
func TestVerifyNamesShouldAndKnownFailures(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	bad := acceptsDimming101(t)
	// Only the MUST failures are excused: the SHOULD ones stay failures.
	bl := filepath.Join(t.TempDir(), "baseline.yaml")
	expires := time.Now().AddDate(0, 0, 30).Format(time.DateOnly)
	os.WriteFile(bl, []byte("entries:\n  - {check: 'command.light-dimmer.dimming.101.json', reason: accepted above 100, owner: firmware, expires: "+expires+"}\n"+
		"  - {check: 'command.light-dimmer.dimming.101.xml', reason: accepted above 100, owner: firmware, expires: "+expires+"}\n"), 0o644)
	path := filepath.Join(t.TempDir(), "b.tar.gz")
	r := gwconform(t, "--target", bad, "--baseline", bl, "--bundle", path)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	var should []string
	for id, level := range failed(reports(t, r.dir)) {
		if level == "SHOULD" {
			should = append(should, id)
		}
	}
	if len(should) == 0 {
		t.Fatal("the run has no SHOULD failure to name")
	}
	code, out := verify(t, path, "--integrity-only", "--accept-verdict", "PASS_WITH_KNOWN_FAILURES")
	if code != 0 || !strings.Contains(out, "verdict PASS with 2 known failures") || !strings.Contains(out, "2 known failure(s)") ||
		!strings.Contains(out, "command.light-dimmer.dimming.101.xml: expected failure (baseline: accepted above 100") ||
		!strings.Contains(out, fmt.Sprintf("%d SHOULD failure(s)", len(should))) || !strings.Contains(out, "observer http://127.0.0.1:") {
		t.Errorf("verify: exit %d\n%s", code, out)
	}
	for _, id := range should {
		if !strings.Contains(out, "  "+id+": ") {
			t.Errorf("verify does not name the SHOULD failure %s:\n%s", id, out)
		}
	}
}
