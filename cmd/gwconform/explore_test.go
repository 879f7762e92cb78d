package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gwdmi/gwtools/conformance/explore"
	"github.com/gwdmi/gwtools/conformance/report"
)

// exploreRun runs gwconform explore in-process and returns the exit code,
// stdout and stderr.
func exploreRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := exploreCmd(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestExploreEmbeddedSimulatorPasses(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := exploreRun(t, "--operations", "800", "--seed", "5", "--report-dir", dir)
	if code != report.ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "PASS") || !strings.Contains(errs, "seed 5") {
		t.Errorf("the summary does not say PASS and the seed:\n%s\n%s", out, errs)
	}
	ef, err := explore.ReadFile(filepath.Join(dir, explore.JSONName))
	if err != nil {
		t.Fatal(err)
	}
	if ef.Seed != 5 || ef.Operations != 800 || ef.Found != nil {
		t.Errorf("explore.json: seed %d, %d operations, finding %v", ef.Seed, ef.Operations, ef.Found)
	}
	junit, err := os.ReadFile(filepath.Join(dir, explore.JUnitName))
	if err != nil || !strings.Contains(string(junit), `name="seed" value="5"`) || !strings.Contains(string(junit), `failures="0"`) {
		t.Errorf("JUnit report without the seed or with a failure: %v\n%s", err, junit)
	}
}

// ignoresFifthCommand is gwsim behind a proxy that answers every fifth
// command since the last reset with success and drops it.
func ignoresFifthCommand(t *testing.T) string {
	var mu sync.Mutex
	n := 0
	return faulty(t, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/_sim/reset":
			n = 0
		case "/v1/services/gateway/command":
			if n++; n%5 == 0 && bytes.Contains(body, []byte("sign")) {
				success(w, r)
				return true
			}
		}
		return false
	})
}

func TestExploreFindsShrinksAndReplays(t *testing.T) {
	url := ignoresFifthCommand(t)
	dir := t.TempDir()
	code, out, errs := exploreRun(t, "--target", url, "--duration", "30s", "--seed", "9", "--report-dir", dir)
	if code != report.ExitFail {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	ef, err := explore.ReadFile(filepath.Join(dir, explore.JSONName))
	if err != nil {
		t.Fatal(err)
	}
	if ef.Found == nil || len(ef.Found.Ops) > 6 || !ef.Found.Reproducible || ef.Seed != 9 {
		t.Fatalf("explore.json: seed %d, finding %+v\n%s", ef.Seed, ef.Found, out)
	}
	for _, name := range []string{explore.JSONName, explore.JUnitName, explore.HTMLName, explore.ScriptName} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("demo-secret")) || bytes.Contains(b, []byte("other-secret")) {
			t.Errorf("%s carries a secret", name)
		}
		if name != explore.JSONName && !bytes.Contains(b, []byte("9")) {
			t.Errorf("%s does not name the seed", name)
		}
	}
	sb, _ := os.ReadFile(filepath.Join(dir, explore.ScriptName))
	t.Logf("%s\n%s", out, sb)
	// The curl script, run as it is, signs each request afresh and
	// reproduces: the read at its end shows the command lost.
	script := filepath.Join(dir, explore.ScriptName)
	cmd := exec.Command("sh", script)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bins.gwconform)+":"+os.Getenv("PATH"), "GWCONFORM_FLEET=")
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, got)
	}
	posts, wrongSign := 0, false
	for _, op := range ef.Found.Ops {
		if !op.IsRead() {
			posts++
		}
		wrongSign = wrongSign || op.BadSign
	}
	if n := strings.Count(string(got), "HTTP/1.1 "); n != posts || strings.Contains(string(got), "gwconform sign:") ||
		(!wrongSign && strings.Contains(string(got), "bad_signature")) {
		t.Errorf("the curl script sent %d of %d requests, or one was not signed afresh:\n%s", n, posts, got)
	}
	// replay runs the shrunk sequence again: reproduced against the
	// faulty target (exit 0), changed against gwsim itself (exit 1).
	var rout, rerr bytes.Buffer
	if code := replayCmd(context.Background(), []string{filepath.Join(dir, explore.JSONName), "--target", url}, &rout, &rerr); code != report.ExitPass {
		t.Errorf("replay against the faulty target: exit %d\n%s\n%s", code, rout.String(), rerr.String())
	}
	if !strings.Contains(rout.String(), "REPRODUCED") {
		t.Errorf("replay did not say REPRODUCED:\n%s", rout.String())
	}
	// A password in --target is sent, never shown.
	sim := faulty(t, func(http.ResponseWriter, *http.Request, []byte) bool { return false })
	rout.Reset()
	withPassword := strings.Replace(sim, "http://", "http://gw:not-shown@", 1)
	if code := replayCmd(context.Background(), []string{filepath.Join(dir, explore.JSONName), "--target", withPassword}, &rout, &rerr); code != report.ExitFail {
		t.Errorf("replay against gwsim: exit %d, want 1\n%s", code, rout.String())
	}
	if strings.Contains(rout.String()+rerr.String(), "not-shown") {
		t.Errorf("replay shows the password of --target:\n%s\n%s", rout.String(), rerr.String())
	}
}

func TestExploreConfigurationErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"--duration", "1s", "--operations", "5"},
		{"--clients", "0"},
		{"--operations", "-1"},
		{"stray"},
		{"--target", "http://127.0.0.1:1", "--operations", "5"},
		{"--fleet", "/no/such/fleet.yaml"},
	} {
		code, out, errs := exploreRun(t, append(args, "--report-dir", t.TempDir())...)
		if code != report.ExitConfig {
			t.Errorf("%v: exit %d, want 2\n%s\n%s", args, code, out, errs)
		}
	}
	// An observer that does not answer the CONTRACT 7 reads.
	sim := faulty(t, func(http.ResponseWriter, *http.Request, []byte) bool { return false })
	code, _, errs := exploreRun(t, "--target", sim, "--observer", "http://127.0.0.1:1", "--operations", "5", "--report-dir", t.TempDir())
	if code != report.ExitConfig || !strings.Contains(errs, "--observer") {
		t.Errorf("unreachable observer: exit %d\n%s", code, errs)
	}
}

func TestExploreConcurrentClientsAgainstSimulator(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := exploreRun(t, "--operations", "400", "--clients", "4", "--seed", "2", "--report-dir", dir)
	if code != report.ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	var doc map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, explore.JSONName))
	if err := json.Unmarshal(b, &doc); err != nil || doc["clients"] != float64(4) {
		t.Errorf("explore.json does not record 4 clients: %v %v", err, doc["clients"])
	}
}
