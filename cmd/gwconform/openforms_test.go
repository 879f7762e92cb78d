package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// The forms neither text decides are open (the CONTRACT's preamble):
// gwconform never fails a target on them. These tests prove it on gwsim
// in both readings, each started as its own process: gwsim serve
// --open-forms refuse (its default: every open form refused) and
// --open-forms accept (every open form accepted), which is the
// executable form of "no faithful implementation fails".

// exploreOn runs gwconform explore against target for d with clients.
func exploreOn(t *testing.T, target string, d time.Duration, clients string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.gwconform, "explore", "--target", target, "--duration", d.String(), "--clients", clients,
		"--report-dir", t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running gwconform explore: %v", err)
	}
	return code, out.String()
}

// openFormsBothWays runs, against gwsim serve in each --open-forms mode,
// the whole suite at --fail-on should (when suite) and gwconform explore
// for d with 1 and with 4 clients: each must pass.
func openFormsBothWays(t *testing.T, suite bool, d time.Duration) {
	for _, mode := range []string{"refuse", "accept"} {
		t.Run(mode, func(t *testing.T) {
			p := simtest.Serve(t, bins.gwsim, "--open-forms", mode)
			if suite {
				r := gwconform(t, "--target", p.URL, "--fail-on", "should")
				if r.code != 0 || !strings.Contains(r.stdout, "PASS") {
					t.Errorf("gwconform run --fail-on should against gwsim --open-forms %s: exit %d\n%s\n%s", mode, r.code, tail(r.stdout), r.stderr)
				}
				if !strings.Contains(r.stdout, "INFO") {
					t.Errorf("no INFO probes ran:\n%s", tail(r.stdout))
				}
			}
			for _, clients := range []string{"1", "4"} {
				if code, out := exploreOn(t, p.URL, d, clients); code != 0 {
					t.Errorf("gwconform explore --clients %s for %s against gwsim --open-forms %s: exit %d\n%s", clients, d, mode, code, tail(out))
				}
			}
		})
	}
}

// TestOpenFormsNeverFail is the heavy proof (make test-heavy): the whole
// suite and a 60 s explore with 1 and 4 clients against both readings.
func TestOpenFormsNeverFail(t *testing.T) {
	simtest.Heavy(t)
	openFormsBothWays(t, true, 60*time.Second)
}

// TestOpenFormsNeverFailShort is its short form for make test: explore
// for 2 s with 1 and 4 clients against both readings.
func TestOpenFormsNeverFailShort(t *testing.T) {
	simtest.Heavy(t)
	openFormsBothWays(t, false, 2*time.Second)
}
