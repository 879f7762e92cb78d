package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestJUnitTimesAndFamilies: against a target some milliseconds away,
// where checks run ahead of their place, each JUnit test case has its own
// time (what its requests took: none is 0, none is charged the others'
// wait) and a classname per family.
func TestJUnitTimesAndFamilies(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	it := newIndepTarget(indepDeviation{})
	api := far(t, it.api, 6*time.Millisecond)
	reads := far(t, it.reads, time.Millisecond)
	r := gwconform(t, "--target", api, "--observer", reads, "--fleet", indepFleetFile(t, indepKey, indepSecret),
		"--check", "command.light-dimmer.*", "--check", "command.thermostat.*", "--allow-partial")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(r.dir, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Cases []struct {
				Name      string    `xml:"name,attr"`
				Classname string    `xml:"classname,attr"`
				Time      float64   `xml:"time,attr"`
				Skipped   *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, c := range doc.Suites[0].Cases {
		if !strings.HasPrefix(c.Name, "command.") {
			continue
		}
		want := "gwconform." + strings.Join(strings.SplitN(c.Name, ".", 3)[:2], ".")
		if c.Classname != want {
			t.Errorf("%s: classname %q, want %q", c.Name, c.Classname, want)
		}
		if c.Skipped != nil {
			continue
		}
		ran++
		if c.Time < 0.005 || c.Time > 1 {
			t.Errorf("%s: time %v s; its requests took some 6 ms each", c.Name, c.Time)
		}
	}
	if ran < 50 {
		t.Errorf("only %d checks ran", ran)
	}
}
