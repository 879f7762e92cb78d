package main

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestDiffDocsExamplesRun runs every gwconform diff command of
// docs/diff.md, its URLs replaced by test targets (a service with its
// observer on another port for --observer-b: the independent
// implementation), its fleet by a matching fleet file and its budget by 300
// operations: each parses and compares (exit 0 or 1, never 2). The one
// after two gwsim serve lines runs against gwsim started with those lines'
// flags (--open-forms refuse, accept): it must find differences, judged
// both.
func TestDiffDocsExamplesRun(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/diff.md")
	if err != nil {
		t.Fatal(err)
	}
	demoFleet := filepath.Join(t.TempDir(), "fleet.yaml")
	b, err := os.ReadFile("../../fixtures/demo-fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(demoFleet, b, 0o644)
	n := 0
	var serves [][]string // the gwsim serve lines since the last diff
	for _, line := range strings.Split(string(doc), "\n") {
		if rest, ok := strings.CutPrefix(line, "gwsim serve "); ok {
			var args []string
			fields := strings.Fields(strings.TrimSuffix(rest, "&"))
			for i := 0; i < len(fields); i++ {
				switch fields[i] {
				case "--addr": // simtest.Serve picks a free port
					i++
				case "--fleet":
					args = append(args, "--fleet", demoFleet)
					i++
				default:
					args = append(args, fields[i])
				}
			}
			serves = append(serves, args)
			continue
		}
		if !strings.HasPrefix(line, "gwconform diff ") {
			continue
		}
		n++
		args := strings.Fields(strings.TrimPrefix(line, "gwconform diff "))
		service := strings.Contains(line, "--observer-b")
		pair, started := !service && len(serves) == 2, serves
		serves = nil
		var urls []string
		fleetFile := demoFleet
		switch {
		case pair:
			// gwsim in its two --open-forms modes, started as the doc
			// starts them: the open forms differ, so exit 1.
			urls = []string{simtest.Serve(t, bins.gwsim, started[0]...).URL, simtest.Serve(t, bins.gwsim, started[1]...).URL}
		case service:
			fleetFile = indepFleetFile(t, indepKey, indepSecret)
			f, err := fleet.Load(fleetFile)
			if err != nil {
				t.Fatal(err)
			}
			sim := httptest.NewServer(simulator.New(simulator.Options{Fleet: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Server.Handler())
			t.Cleanup(sim.Close)
			api, reads := newIndepTarget(indepDeviation{}).serve(t)
			urls = []string{sim.URL, api, reads}
		default:
			urls = []string{deviantSim(t, ""), deviantSim(t, "")}
		}
		var run []string
		target := 0
		for i := 0; i < len(args); i++ {
			switch args[i] {
			case "--target":
				run = append(run, "--target", urls[target])
				target++
				i++
			case "--observer-b":
				run = append(run, "--observer-b", urls[2])
				i++
			case "--fleet":
				run = append(run, "--fleet", fleetFile)
				i++
			case "--duration":
				run = append(run, "--operations", "300")
				i++
			default:
				run = append(run, args[i])
			}
		}
		run = append(run, "--report-dir", t.TempDir(), "--calibrate-operations", "100")
		code, out, errs := diffRun(t, run...)
		if code == report.ExitConfig || pair && (code != report.ExitFail || !strings.Contains(out, "agrees with: both")) {
			t.Errorf("docs/diff.md: %s\nexit %d\n%s\n%s", line, code, out, errs)
		}
	}
	if n != 4 {
		t.Errorf("docs/diff.md has %d gwconform diff examples, want the three uses and gwsim's two --open-forms modes", n)
	}
}
