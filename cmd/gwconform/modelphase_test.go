package main

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// TestModelPhaseFindsAndReplays: against gwsim with the isolation bug no
// fixed check caught (a command naming another account's device through
// the tested gateway, refused 404 and applied all the same), the run's
// model-based phase fails model.isolation at MUST with the sentence it
// rests on, report.json records the phase's seed, budget, coverage and
// shrunk sequence, and gwconform replay report.json model.isolation runs
// that sequence again and reproduces it.
func TestModelPhaseFindsAndReplays(t *testing.T) {
	d := deviations["applies-command-to-other-accounts-device"]
	url := inProcessSim(t, device.RefuseOpen, func(h http.Handler) http.Handler { return deviant(h, &d) })
	r := gwconform(t, "--target", url, "--check", "model.*", "--allow-partial", "--seed", "3")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, tail(r.stdout))
	}
	doc, err := loadReport(filepath.Join(r.dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	res, ok := doc.Result("model.isolation")
	if !ok || res.Outcome != report.Failed || res.Level != "MUST" {
		t.Fatalf("model.isolation: %+v", res)
	}
	for _, want := range []string{"API-5.account-gateways", "A key acts only on its own account's gateways", "isolation: sn of another account's device"} {
		if !strings.Contains(res.Failure, want) {
			t.Errorf("the failure does not say %q:\n%s", want, res.Failure)
		}
	}
	for _, id := range []string{"model.answers", "model.effects", "model.contract"} {
		if res, _ := doc.Result(id); res.Outcome != report.Passed {
			t.Errorf("%s: %s, want passed: %s", id, res.Outcome, res.Failure)
		}
	}
	m := doc.Model
	if m == nil || m.Seed != 3 || m.BudgetOperations != 1000 || m.BudgetSeconds <= 0 || len(m.Coverage) != 3 || len(m.Findings) != 1 {
		t.Fatalf("report.json's model phase: %+v", m)
	}
	if f := m.Findings[0]; f.Check != "model.isolation" || len(f.Operations) > 4 || !f.Reproducible || len(f.Sequence) == 0 {
		t.Errorf("finding: %+v", f)
	}
	for _, c := range m.Coverage {
		if c.Reached != c.Total {
			t.Errorf("coverage %s: %d of %d", c.Name, c.Reached, c.Total)
		}
	}
	var out, errb bytes.Buffer
	code := replayMain(context.Background(), []string{filepath.Join(r.dir, "report.json"), "model.isolation", "--target", url}, &out, &errb)
	if code != report.ExitPass || !strings.Contains(out.String(), "REPRODUCED") {
		t.Errorf("replay: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
}
