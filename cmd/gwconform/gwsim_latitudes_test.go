package main

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// gwsimLatitudes are gwsim serve's flags that each take one latitude of
// a faithful service (CONTRACT's preamble; docs/usage.md, Latitudes), and
// all of them together.
var gwsimLatitudes = []struct {
	name string
	args []string
	// replays: the run still sends requests that repeat one it sent
	// before (the harness's own replays, issue 54's first item), which a
	// service that refuses replays refuses. Until the harness never
	// repeats a request by accident, every failure of the row must be
	// such a refusal, and the row fails once it passes, so that the mark
	// is taken off.
	replays bool
}{
	{"reject-replays", []string{"--reject-replays"}, false},
	{"effect-delay", []string{"--effect-delay", "80ms"}, false},
	{"message-cap", []string{"--message-cap", "3"}, false},
	{"connection-close", []string{"--connection-close"}, false},
	{"pretty", []string{"--pretty"}, false},
	{"own-details", []string{"--own-details"}, false},
	{"all", []string{"--reject-replays", "--effect-delay", "80ms", "--message-cap", "3", "--connection-close", "--pretty", "--own-details"}, false},
}

// TestGwsimLatitudesPass: gwconform run --fail-on should, with gwsim's
// admin API as its observer, passes gwsim serve taking each latitude of
// a faithful service, and taking all of them at once. A failure lists
// every failed check with its reason. -run
// 'TestGwsimLatitudesPass/<name>' runs one.
func TestGwsimLatitudesPass(t *testing.T) {
	simtest.Heavy(t)
	for _, l := range gwsimLatitudes {
		t.Run(l.name, func(t *testing.T) {
			url := startGwsim(t, l.args...)
			r := runGwconformFor(t, 6*time.Minute, bins.gwconform, nil, "--target", url, "--fail-on", "should")
			if r.code == 0 && l.name == "own-details" {
				// What no sentence states is reported where gwsim's own
				// details differ from its usual ones, never failed.
				seen := 0
				for _, res := range reports(t, r.dir).Results {
					for _, o := range res.Observations {
						if strings.Contains(o, "method_refused") && strings.Contains(o, "not judged") {
							seen++
						}
					}
				}
				if seen == 0 {
					t.Errorf("no check reported the 405's own code method_refused")
				}
			}
			if r.code == 0 && strings.Contains(r.stdout, "PASS") {
				if l.replays {
					t.Errorf("gwsim serve %s passes: take the row's replays mark off", strings.Join(l.args, " "))
				}
				return
			}
			failed := map[string][]string{}
			replayed := 0
			for _, res := range reports(t, r.dir).Results {
				if res.Outcome == "failed" {
					why, _, _ := strings.Cut(res.Failure, "\n")
					if l.replays && strings.Contains(why, "replayed_request") {
						replayed++
						continue
					}
					failed[res.Level] = append(failed[res.Level], res.ID+": "+why)
				}
			}
			if l.replays && len(failed) == 0 && replayed > 0 {
				t.Logf("gwsim serve %s: %d checks failed on the harness's own replays (401 replayed_request), the known cause; nothing else failed",
					strings.Join(l.args, " "), replayed)
				return
			}
			var lines []string
			for level, ids := range failed {
				sort.Strings(ids)
				lines = append(lines, fmt.Sprintf("%d %s failed:\n  %s", len(ids), level, strings.Join(ids, "\n  ")))
			}
			sort.Strings(lines)
			t.Errorf("gwconform run --fail-on should against gwsim serve %s: exit %d\n%s\n%s", strings.Join(l.args, " "), r.code,
				strings.Join(lines, "\n"), tail(r.stdout))
		})
	}
}
