package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden from the runs of TestGoldenRuns")

// TestGoldenRuns: the verdict of every check, with the seed 7, against the
// embedded simulator, gwsim reading the open forms both ways (accepting
// them near and 6 to 12 ms away, where the checks run ahead of their
// place, devices side by side: the same record), a target with a bug in a
// refusal of each operation (near and far: the same record), four workers on a wider fleet, and, for the checks of a
// light dimmer, a thermostat's mode and the messages, a target that
// applies each change 300 ms after its answer, is the one recorded in
// testdata/golden. A change to the engine
// (how checks are built, sent, scheduled, judged or reported) that changes
// a verdict shows here check by check; a change that means to change
// verdicts (a new check, a corrected level) rewrites the files with
// go test -run TestGoldenRuns ./cmd/gwconform -update-golden, and the
// diff is reviewed like code.
func TestGoldenRuns(t *testing.T) {
	simtest.Heavy(t)
	served := func(open device.OpenForms, wrap func(http.Handler) http.Handler) string {
		return inProcessSim(t, open, wrap)
	}
	as := func(h http.Handler) http.Handler { return h }
	buggy := refusalsAccepted
	_, wide := wideFleet(t, 4)
	late := []string{"--target", lagging(t, fleet.Demo(), 300*time.Millisecond), "--check", "command.light-dimmer.*",
		"--check", "command.thermostat.mode.*", "--check", "message.*"}
	for _, c := range []struct {
		name, file string
		args       []string
	}{
		{"embedded", "", nil},
		{"open-forms-refused", "", []string{"--target", served(device.RefuseOpen, as)}},
		{"open-forms-accepted", "", []string{"--target", served(device.AcceptOpen, as)}},
		{"open-forms-accepted-far", "open-forms-accepted", []string{"--target", farAway(t, served(device.AcceptOpen, as), 6*time.Millisecond, 12*time.Millisecond, 7)}},
		{"refusals-accepted", "", []string{"--target", served(device.RefuseOpen, buggy)}},
		{"refusals-accepted-far", "refusals-accepted", []string{"--target", farAway(t, served(device.RefuseOpen, buggy), 6*time.Millisecond, 12*time.Millisecond, 7)}},
		{"parallel-4", "", []string{"--fleet", wide, "--parallel", "4"}},
		{"applies-late", "", late},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := gwconform(t, append([]string{"--seed", "7", "--fail-on", "should", "--allow-partial"}, c.args...)...)
			if r.code > 1 {
				t.Fatalf("exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
			}
			filtered := slices.Contains(c.args, "--check")
			got := goldenText(outcomesOf(t, r.dir), reports(t, r.dir).Verdict, filtered)
			file := c.file
			if file == "" {
				file = c.name
			}
			path := filepath.Join("testdata", "golden", file+".txt")
			if *updateGolden && c.file == "" {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -run TestGoldenRuns ./cmd/gwconform -update-golden records it)", err)
			}
			if got != string(want) {
				wl, gl := strings.Split(string(want), "\n"), map[string]bool{}
				for _, l := range strings.Split(got, "\n") {
					gl[l] = true
				}
				n := 0
				for _, l := range wl {
					if !gl[l] && n < 20 {
						t.Errorf("recorded %q, not so in this run", l)
						n++
					}
				}
				t.Errorf("the verdicts differ from %s (go test -run TestGoldenRuns ./cmd/gwconform -update-golden rewrites it: review the diff)", path)
			}
		})
	}
}

// goldenText is a run's verdict, how many checks passed, and each other
// check's outcome, one a line, in ID order: a check that stops passing, or
// starts, shows as a line of the diff. In a run filtered to some checks,
// the skipped ones (the filter's, most of them) are counted, not listed.
func goldenText(outcomes map[string]string, verdict string, filtered bool) string {
	ids := make([]string, 0, len(outcomes))
	passed, skipped := 0, 0
	for id, o := range outcomes {
		switch {
		case o == "passed":
			passed++
			continue
		case o == "skipped" && filtered:
			skipped++
			continue
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "verdict %s\npassed %d of %d checks", verdict, passed, len(outcomes))
	if filtered {
		fmt.Fprintf(&b, ", %d skipped (most by the run's filter)", skipped)
	}
	b.WriteString("; the others:\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "%s %s\n", outcomes[id], id)
	}
	return b.String()
}
