package scenario_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/fixtures/sampleapp"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/scenario"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

func TestExampleParses(t *testing.T) {
	sc, err := scenario.Load(filepath.Join("..", "..", "fixtures", "scenario-outage.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Steps) != 6 || sc.End() != 2*time.Minute {
		t.Errorf("steps %d, end %s", len(sc.Steps), sc.End())
	}
	if got := sc.Steps[0].Label(); got != "gateway a4c138f0e2b1 offline (10s for 30s)" {
		t.Errorf("label %q", got)
	}
	if got := sc.Steps[4].Label(); got != "20% errors, no Retry-After (1m40s for 20s)" {
		t.Errorf("label %q", got)
	}
	if _, err := scenario.Parse([]byte("steps: [{at: 1s, error_rate: {rate: 1}, retry_after: soon}]")); err == nil || !strings.Contains(err.Error(), "retry_after") {
		t.Errorf("a bad retry_after: %v", err)
	}
	sc, err = scenario.Parse([]byte("steps: [{at: 2, for: 1.5, latency: 1s}]"))
	if err != nil || sc.Steps[0].At.Duration != 2*time.Second || sc.Steps[0].For.Duration != 1500*time.Millisecond {
		t.Errorf("seconds as numbers: %v %+v", err, sc)
	}
}

func TestBadScenariosAreRefused(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"steps: []", "at least one step"},
		{"steps: [{at: 1s}]", "exactly one of"},
		{"steps: [{at: 1s, gateway_offline: zz}]", "12-hex mac"},
		{"steps: [{at: 1s, gateway_offline: a4c138f0e2b1, latency: 1s}]", "exactly one of"},
		{"steps: [{at: 1s, error_rate: {operation: reboot, rate: 0.1}}]", "not an operation"},
		{"steps: [{at: 1s, error_rate: {rate: 2}}]", "from 0 to 1"},
		{"steps: [{at: soon, latency: 1s}]", "not a duration"},
		{"steps: [{at: 1s, gateway_ofline: a4c138f0e2b1}]", "gateway_ofline"},
		{"steps: [{at: 1s, redis_loss: true}]", "needs a for"},
	} {
		_, err := scenario.Parse([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestScenarioThroughAdminAPIAndApp plays a short timeline on a gwsim:
// the gateway goes offline, comes back, the faults set by hand are kept
// and put back; the admin API stops and restarts it; the sample app's
// requests during the outage are counted under it in the client report.
func TestScenarioThroughAdminAPIAndApp(t *testing.T) {
	sc, err := scenario.Parse([]byte(`
name: short outage
autostart: false
steps:
  - {at: 0s, for: 700ms, gateway_offline: a4c138f0e2b1}
  - {at: 0s, error_rate: {operation: update_name, rate: 1}}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := scenario.NewPlayer(sc, nil)
	sim := simtest.Start(t, simulator.Options{Fleet: fleet.Demo(), AdminToken: "tok", ClientPhases: p.Phases, Admin: p.Routes()})
	t.Cleanup(func() { p.Stop() })
	p.Attach(sim.Server)
	c := simtest.NewClient(t, sim.URL())
	c.AdminToken = "tok"
	// A fault set by hand before the scenario: kept while it plays.
	c.AdminJSON(http.MethodPut, "/_sim/faults", `{"offline_gateways":["a4c138f0e2b2"]}`, nil)

	if status, _, _ := (&simtest.Client{T: t, Base: sim.URL(), HTTP: http.DefaultClient}).Admin(http.MethodPost, "/_sim/scenario/start", ""); status != http.StatusUnauthorized {
		t.Errorf("start without the token: %d", status)
	}
	var st scenario.Status
	c.AdminJSON(http.MethodPost, "/_sim/scenario/start", "", &st)
	if !st.Running || len(st.Steps) != 2 || !st.Steps[0].Active {
		t.Fatalf("status after start: %+v", st)
	}
	var f server.Faults
	c.AdminJSON(http.MethodGet, "/_sim/faults", "", &f)
	if len(f.OfflineGateways) != 2 || f.OperationErrorRates["update_name"] != 1 {
		t.Errorf("faults while playing: %+v", f)
	}
	// The sample app during the outage: its commands get 504.
	target, _ := fleet.Demo().Target()
	res, err := sampleapp.Run(context.Background(), sampleapp.Config{Target: sim.URL(), Format: device.XML, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Codes[device.CodeGatewayOffline] == 0 {
		t.Errorf("no gateway_offline during the outage: %+v", res)
	}
	var rep clients.Report
	c.AdminJSON(http.MethodGet, "/_sim/clients", "", &rep)
	app, _ := rep.Client(clients.Mask(target.Key.Key))
	if len(app.Phases) == 0 || app.Phases[0].Phase != "gateway a4c138f0e2b1 offline (0s for 700ms)" || app.Phases[0].Codes[device.CodeGatewayOffline] == 0 {
		t.Errorf("phases %+v", app.Phases)
	}
	if len(app.Judgements) == 0 || rep.Failed() != 0 {
		t.Errorf("the clean app failed judgements during the scenario: %+v", app.Judgements)
	}
	// The outage ends by itself; the endless step stays.
	waitFor(t, "the gateway back online", func() bool {
		f = server.Faults{}
		c.AdminJSON(http.MethodGet, "/_sim/faults", "", &f)
		return len(f.OfflineGateways) == 1
	})
	c.AdminJSON(http.MethodGet, "/_sim/scenario", "", &st)
	if !st.Running || st.Steps[0].Active || !st.Steps[0].Done || !st.Steps[1].Active {
		t.Errorf("status after the outage: %+v", st)
	}
	// Stop puts back the faults set by hand; restart plays from 0.
	c.AdminJSON(http.MethodPost, "/_sim/scenario/stop", "", &st)
	f = server.Faults{} // json.Unmarshal would merge into the maps of the last answer
	c.AdminJSON(http.MethodGet, "/_sim/faults", "", &f)
	if st.Running || len(f.OfflineGateways) != 1 || f.OfflineGateways[0] != "a4c138f0e2b2" || len(f.OperationErrorRates) != 0 {
		t.Errorf("after stop: %+v, faults %+v", st, f)
	}
	c.AdminJSON(http.MethodPost, "/_sim/scenario/restart", "", &st)
	if !st.Running || !st.Steps[0].Active {
		t.Errorf("after restart: %+v", st)
	}
}

// TestScenarioFinishes: a timeline of bounded steps ends by itself and
// puts the faults back.
func TestScenarioFinishes(t *testing.T) {
	sc, err := scenario.Parse([]byte(`steps: [{at: 100ms, for: 200ms, latency: 10ms}]`))
	if err != nil {
		t.Fatal(err)
	}
	sim := simtest.Start(t, simulator.Options{Fleet: fleet.Demo()})
	p := scenario.NewPlayer(sc, nil)
	p.Attach(sim.Server)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the latency", func() bool { return sim.Server.Faults().Latency.Duration == 10*time.Millisecond })
	waitFor(t, "the end", func() bool { return p.Status().Finished })
	if l := sim.Server.Faults().Latency.Duration; l != 0 {
		t.Errorf("latency %s after the end", l)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := scenario.Load(filepath.Join(t.TempDir(), "none.yaml"))
	if err == nil || !os.IsNotExist(err) && !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}

// TestSampleAppThroughScenario: the sample app plays its session while a
// scenario is in force (a slow gateway, renames failing); the client
// report counts its requests under each fault, names each bug switch, and
// is clean with no switch on, in both formats.
func TestSampleAppThroughScenario(t *testing.T) {
	sc, err := scenario.Parse([]byte(`
name: slow and failing renames
steps:
  - {at: 0s, latency: 5ms}
  - {at: 0s, error_rate: {operation: update_name, rate: 1}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		bugs  sampleapp.Bugs
		limit int
		want  string
	}{
		{"clean", sampleapp.Bugs{}, 8, ""},
		{"retry-at-once", sampleapp.Bugs{RetryAtOnce: true}, 3, clients.JudgeRetryAfter},
		{"wrong-clock", sampleapp.Bugs{WrongClock: true}, 0, clients.JudgeClock},
		{"relay2", sampleapp.Bugs{Relay2: true}, 0, clients.JudgeForeign},
		{"resend-400", sampleapp.Bugs{Resend400: true}, 0, clients.JudgeResend400},
	} {
		for _, f := range []device.Format{device.JSON, device.XML} {
			t.Run(tc.name+"/"+f.String(), func(t *testing.T) {
				// Each plays against a simulator of its own, and most of
				// its time waits out the Retry-After of the rate limit.
				t.Parallel()
				p := scenario.NewPlayer(sc, nil)
				sim, err := simulator.Start("127.0.0.1:0", simulator.Options{RateLimit: tc.limit, ClientPhases: p.Phases, Admin: p.Routes()})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { p.Stop(); sim.Close() })
				p.Attach(sim.Server)
				if err := p.Start(); err != nil {
					t.Fatal(err)
				}
				res, err := sampleapp.Run(context.Background(), sampleapp.Config{Target: sim.URL(), Format: f, Burst: 4, Bugs: tc.bugs})
				if err != nil {
					t.Fatal(err)
				}
				// The stale clock and the retry loop never reach the rename.
				reaches := !tc.bugs.WrongClock && !tc.bugs.RetryAtOnce
				if reaches && res.Codes[device.CodeInjectedFault] == 0 {
					t.Errorf("the rename did not fail during the scenario: %+v", res)
				}
				var rep clients.Report
				simtest.NewClient(t, sim.URL()).AdminJSON(http.MethodGet, "/_sim/clients", "", &rep)
				target, _ := fleet.Demo().Target()
				app, ok := rep.Client(clients.Mask(target.Key.Key))
				if !ok {
					t.Fatalf("no client: %+v", rep)
				}
				var failed []string
				for _, j := range app.Judgements {
					if !j.Passed {
						failed = append(failed, j.ID)
					}
				}
				switch {
				case tc.want == "" && len(failed) != 0:
					t.Errorf("a clean app failed %v", failed)
				case tc.want != "" && !strings.Contains(strings.Join(failed, " "), tc.want):
					t.Errorf("%s not named: failed %v", tc.want, failed)
				}
				phases := map[string]clients.Phase{}
				for _, ph := range app.Phases {
					phases[ph.Phase] = ph
				}
				slow, renames := phases["latency 5ms (from 0s)"], phases["100% errors on update_name (from 0s)"]
				if slow.Requests != uint64(res.Requests) || renames.Requests != slow.Requests || reaches && renames.Codes[device.CodeInjectedFault] == 0 {
					t.Errorf("phases %+v, the app sent %d requests", app.Phases, res.Requests)
				}
				if tc.bugs.RetryAtOnce && slow.RetriedEarly == 0 {
					t.Errorf("the early retries are not counted under the fault: %+v", slow)
				}
			})
		}
	}
}
