package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/fixtures"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestSlowDeviceIsJudgedAndTheRunEndsInTime: every request of the
// interface naming the Light Dimmer is answered after 1.5 s, and the
// dimmer accepts dimming 101. The run judges it as a fast target is
// judged (the 101 checks fail, nothing else does), the failures found
// while its checks were sent concurrently are confirmed alone, progress
// names the slow device and its median answer, and the whole run ends
// within the 2 minutes runGwconform allows.
func TestSlowDeviceIsJudgedAndTheRunEndsInTime(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	slowDeviceRun(t, 2*time.Minute, fixtures.DemoFleet, "Light Dimmer", "0123456789abcdef0123456789abcd06",
		`"dimming":"101"|<dimming>101</dimming>`, nil,
		[]string{"command.light-dimmer.dimming.101.json", "command.light-dimmer.dimming.101.xml"}, false,
		`\(\d+ state checks of valid values run on Light Dimmer 0123456789abcdef0123456789abcd07`)
}

// TestSlowThermostatIsJudgedAndTheRunEndsInTime: the same with the
// Thermostat slow (about 120 state checks of valid values, each a change
// read back alone) and accepting mode "Maybe". The fleet has a second
// Thermostat on the account's other gateway: once the Thermostat is known
// slow, the state checks of its valid values after the first of each field
// and format run on that one (conformance/internal/batch, standin.go), and progress says so.
// The verdicts are those of the same target answering at once.
func TestSlowThermostatIsJudgedAndTheRunEndsInTime(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	f := bytes.Replace(fixtures.DemoFleet, []byte("name: Landing, state: {dimming: 70}}\n"),
		[]byte("name: Landing, state: {dimming: 70}}\n          - {sn: 0123456789abcdef0123456789abcd08, type: Thermostat, name: Attic, state: {mode: Auto, cooling_point: 26, heating_point: 20, fan: Auto}}\n"), 1)
	if bytes.Equal(f, fixtures.DemoFleet) {
		t.Fatal("the demo fleet's second gateway is not where the test adds a Thermostat")
	}
	slowDeviceRun(t, 3*time.Minute, f, "Thermostat", "0123456789abcdef0123456789abcd04",
		`"mode":"Maybe"|<mode>Maybe</mode>`, nil,
		[]string{"command.thermostat.mode.not-allowed.json", "command.thermostat.mode.not-allowed.xml"}, false,
		`\(\d+ state checks of valid values run on Thermostat 0123456789abcdef0123456789abcd08`)
}

// TestSlowThermostatAloneIsJudgedAndTheRunEndsInTime: the demo fleet
// alone, whose one Thermostat answers every request after 1.5 s: there is
// no other Thermostat to run its hundred-odd state checks of valid values
// on, so they are sent on it together (conformance/internal/batch, lanes.go). The
// target stores a heating_point sent with three decimals (x.125) with two
// (x.12) and answers success: the state checks of that value catch it
// (and its answer checks, whose change never appears). They fail, and
// nothing else does, exactly as against the same target answering at
// once; progress names the slow device, its median answer
// and how its state checks ran; the whole run ends within 2 minutes.
func TestSlowThermostatAloneIsJudgedAndTheRunEndsInTime(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	threeDecimals := regexp.MustCompile(`(heating point"\s*:\s*"?|<heating_point>)(-?\d+\.12)5([",}<\s])`)
	slowDeviceRun(t, 3*time.Minute, fixtures.DemoFleet, "Thermostat", "0123456789abcdef0123456789abcd04", "",
		func(b []byte) []byte { return threeDecimals.ReplaceAll(b, []byte("${1}${2}${3}")) },
		[]string{"command.thermostat.heating_point.valid.three-decimals.json.sim", "command.thermostat.heating_point.valid.three-decimals.xml.sim",
			// The case's answer checks too: the change they were answered
			// success for never appears (conformance/link/settle.go), in either run.
			"command.thermostat.heating_point.valid.three-decimals.json", "command.thermostat.heating_point.valid.three-decimals.xml"}, true,
		`\(\d+ state checks of valid values sent on it together in \d+s`)
}

// TestSlowThermostatAloneJudgesEveryFieldOfTheState: the same, with a
// target that, for the slow Thermostat, sets fan On whenever a command
// sets mode Heat. Its commands of mode Heat leave a state (Heat, fan On)
// that no check sends: the state checks sent together on the slow device
// catch it in the other field, exactly as against the same target
// answering at once (no MUST check fails but those of mode Heat).
func TestSlowThermostatAloneJudgesEveryFieldOfTheState(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	heat := regexp.MustCompile(`(?i)"mode"\s*:\s*"heat"|<mode>heat</mode>`)
	fan := regexp.MustCompile(`("fan"\s*:\s*"|<fan>)[A-Za-z]*`)
	// Each of its many failures is confirmed alone (1.5 s each) and each
	// answer check of mode Heat waits the settle time for a state that
	// never appears: the run is allowed 4 minutes.
	slowDeviceRun(t, 4*time.Minute, fixtures.DemoFleet, "Thermostat", "0123456789abcdef0123456789abcd04", "",
		func(b []byte) []byte {
			if !heat.Match(b) {
				return b
			}
			return fan.ReplaceAll(b, []byte("${1}On"))
		},
		// With seed 7 the effect check of a command changing every
		// field sets mode Heat in XML: it catches the fault too.
		[]string{"command.thermostat.mode.heat.json.sim", "command.thermostat.mode.heat.xml.sim", "effect.command.thermostat.applied.xml"}, false,
		`\(\d+ state checks of valid values sent on it together in \d+s`)
}

// slowDeviceRun runs gwconform against the simulator with fleet fl, where
// every request naming sn (a device of type typ) waits 1.5 s, a body
// matching fault (when not "") is answered success and a body naming sn
// is changed by alter (when not nil) before the simulator reads it;
// mustFail are the checks that fault or alter fails (at level MUST, or
// with only at any level, and then no other check fails in either run);
// no other MUST check fails but those of the first two's case.
// It runs the same target without the wait first, and wants the same
// outcome for every check, the slow run ended within limit, and the
// progress naming the slow device and matching progress (how its state
// checks of valid values ran).
func slowDeviceRun(t *testing.T, limit time.Duration, fl []byte, typ, sn, fault string, alter func([]byte) []byte, mustFail []string, only bool, progress string) {
	f, err := fleet.Parse(fl)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(file, fl, 0o600); err != nil {
		t.Fatal(err)
	}
	deviant := regexp.MustCompile(fault)
	target := func(wait time.Duration) string {
		h := simulator.New(simulator.Options{Fleet: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Server.Handler()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if wait > 0 && !strings.HasPrefix(r.URL.Path, "/_sim/") && bytes.Contains(bytes.ToLower(body), []byte(sn)) {
				select {
				case <-time.After(wait):
				case <-r.Context().Done():
					return
				}
			}
			if fault != "" && deviant.Match(body) {
				success(w, r)
				return
			}
			if alter != nil && !strings.HasPrefix(r.URL.Path, "/_sim/") && bytes.Contains(bytes.ToLower(body), []byte(sn)) {
				body = alter(body)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	// One seed for both runs: the same values drawn (an effect check's
	// mode, a drawn temperature) meet the same fault.
	fast := gwconform(t, "--target", target(0), "--fleet", file, "--seed", "7")
	r := runGwconformFor(t, limit, bins.gwconform, nil, "--target", target(1500*time.Millisecond), "--fleet", file, "--seed", "7")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (the %s's fault is accepted)\n%s\n%s", r.code, typ, tail(r.stdout), r.stderr)
	}
	got := failed(reports(t, r.dir))
	for _, id := range mustFail {
		if got[id] == "" || !only && got[id] != "MUST" {
			t.Errorf("%s did not fail", id)
		}
	}
	if only {
		for _, run := range []struct {
			name string
			got  map[string]string
		}{{"slow", got}, {"answering at once", failed(reports(t, fast.dir))}} {
			if len(run.got) != len(mustFail) {
				t.Errorf("against the target %s, %d checks failed, want exactly %v: %v", run.name, len(run.got), mustFail, run.got)
			}
		}
	}
	// The other MUST failures allowed: those of the first two's case
	// (its other forms, its parity), and the ones listed.
	common := mustFail[0]
	for _, id := range mustFail[:min(2, len(mustFail))] {
		for !strings.HasPrefix(id, common) {
			common = common[:len(common)-1]
		}
	}
	for id, level := range got {
		if level == "MUST" && !strings.HasPrefix(id, common) && !slices.Contains(mustFail, id) {
			t.Errorf("%s failed (MUST) against a target whose one fault is %s", id, fault)
		}
	}
	outcomes := func(d reportDoc) map[string]string {
		m := map[string]string{}
		for _, x := range d.Results {
			m[x.ID] = x.Outcome
		}
		return m
	}
	want, have := outcomes(reports(t, fast.dir)), outcomes(reports(t, r.dir))
	for id, o := range want {
		if strings.HasPrefix(id, "model.") && have[id] == "passed" {
			// The model-based phase sends random sequences within a
			// budget of time: the slow device gets fewer of them, a
			// prefix of the same seed's, and may not meet the fault the
			// fast target's longer run met. What it met, it judges alike.
			continue
		}
		if have[id] != o {
			t.Errorf("%s: %s against the slow %s, %s against the same target answering at once", id, have[id], typ, o)
		}
	}
	if len(have) != len(want) {
		t.Errorf("%d checks against the slow %s, %d against the same target answering at once", len(have), typ, len(want))
	}
	if !regexp.MustCompile(`slow device ` + typ + ` ` + sn + `: median answer 1\.[45]`).MatchString(r.stdout) {
		t.Errorf("the progress does not name the slow device and its median answer:\n%s", tail(r.stdout))
	}
	if !regexp.MustCompile(progress).MatchString(r.stdout) {
		t.Errorf("the progress does not say how the state checks of valid values ran (%s):\n%s", progress, tail(r.stdout))
	}
	t.Logf("a whole run against a target whose %s answers after 1.5 s: %s (%s when it answers at once)", typ, r.took.Round(time.Second), fast.took.Round(time.Second))
}
