package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestBareCommandExitsTwoWithUsage: gwconform with no command prints the
// usage on stderr and exits 2, like any other usage mistake.
func TestBareCommandExitsTwoWithUsage(t *testing.T) {
	t.Parallel()
	code, out := command(t)
	if code != 2 || !strings.Contains(out, "Usage:") || !strings.Contains(out, "gwconform run") {
		t.Errorf("bare gwconform: exit %d, want 2 and the usage\n%s", code, out)
	}
}

// TestCheckMatchingNothingIsAnError: --check with a pattern that matches no
// check stops before anything is sent, exit 2, one line naming the
// pattern (and the nearest ID for a mistyped one), not a PARTIAL run.
func TestCheckMatchingNothingIsAnError(t *testing.T) {
	t.Parallel()
	for pattern, want := range map[string]string{
		"nonexistent.*":                `--check "nonexistent.*" matches no check`,
		"command.sign.position-18.jsn": `(did you mean command.sign.position-18.json?)`,
	} {
		r := gwconform(t, "--check", "command.light-dimmer.valid.json", "--check", pattern)
		if r.code != 2 || !strings.Contains(r.stderr, want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || strings.Contains(r.stdout, "checking against") {
			t.Errorf("--check %q: exit %d, want 2 and one line with %q\nstdout:\n%s\nstderr:\n%s", pattern, r.code, want, r.stdout, r.stderr)
		}
	}
}

// TestTimestampZoneNamedWhenClocksAgree: a fleet whose timestamp_tz is not
// the target's zone gets every request refused as stale while the clocks
// agree: the pre-flight says so and names the zone, not "the clocks
// differ by 0 s".
func TestTimestampZoneNamedWhenClocksAgree(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	api, _ := newIndepTarget(indepDeviation{}).serve(t)
	fleetFile := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(fleetFile, []byte("timestamp_tz: Asia/Tokyo\n"+indepFleetYAML(indepKey, indepSecret)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := gwconform(t, "--target", api, "--fleet", fleetFile)
	if r.code != 2 || !strings.Contains(r.stderr, "the clocks agree") || !strings.Contains(r.stderr, "Asia/Tokyo") ||
		!strings.Contains(r.stderr, "timestamp_tz") || strings.Contains(r.stderr, "differ by 0 s") {
		t.Errorf("exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
}

// TestSectionThreeNoteTellsTheObserver: report.html's note on section 3
// (states, not shown) says the effect checks read state through the
// observer, not that only the simulator-only checks do.
func TestSectionThreeNoteTellsTheObserver(t *testing.T) {
	t.Parallel()
	r := gwconform(t, "--check", "effect.update_name.light-dimmer.stored.json", "--allow-partial")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	page, err := os.ReadFile(filepath.Join(r.dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(page); !strings.Contains(s, "the effect checks read each device&#39;s state through the observer") || strings.Contains(s, "only the simulator-only state checks") {
		t.Errorf("report.html's note on section 3 does not tell the observer's part")
	}
}
