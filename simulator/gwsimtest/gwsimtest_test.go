package gwsimtest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator/gwsimtest"
)

// recorder is a testing.TB that keeps what an assertion reports, to test
// that an assertion fails when it must.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

// TestParallelServersAreIndependent: servers started by parallel tests
// share nothing: a change, a fault or a report of one is not the other's.
func TestParallelServersAreIndependent(t *testing.T) {
	t.Parallel()
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			sim := gwsimtest.Start(t)
			c := sim.Client()
			if i%2 == 1 {
				c = c.XML()
				if err := sim.DeviceUnreachable(sim.Credentials().MAC, hall); err != nil {
					t.Fatal(err)
				}
			}
			a, err := c.Command(context.Background(), hall, "Light Dimmer", gwsimtest.F("dimming", fmt.Sprint(10+i)))
			if err != nil {
				t.Fatal(err)
			}
			d, _ := sim.Device(sim.Credentials().MAC, hall)
			if i%2 == 1 {
				if a.Status != 504 || a.Code != "device_unreachable" || d.State["dimming"] != 40.0 {
					t.Errorf("unreachable: %v, dimming %v", a, d.State["dimming"])
				}
			} else if !a.OK || d.State["dimming"] != float64(10+i) {
				t.Errorf("%v, dimming %v", a, d.State["dimming"])
			}
			if rep := sim.Report(); len(rep.Clients) != 1 || rep.Clients[0].Requests != 1 {
				t.Errorf("report of another server's requests: %+v", rep.Clients)
			}
			sim.AssertClean(t)
		})
	}
}

// TestStateMessagesAndRequests: Go calls read and set the state, read the
// message log and the journal; a bad state value is refused and changes
// nothing; Reset puts the fleet back.
func TestStateMessagesAndRequests(t *testing.T) {
	t.Parallel()
	sim := gwsimtest.Start(t)
	mac := sim.Credentials().MAC
	if err := sim.SetState(mac, hall, map[string]any{"dimming": 75}); err != nil {
		t.Fatal(err)
	}
	if d, ok := sim.Device(mac, hall); !ok || d.State["dimming"] != 75.0 || d.Type != "Light Dimmer" {
		t.Errorf("after SetState: %+v %v", d, ok)
	}
	for state, want := range map[string]string{
		"dimming=101": "dimming",
		"Relay2=On":   "Relay2 is not a field of a Light Dimmer",
	} {
		k, v, _ := strings.Cut(state, "=")
		var val any = v
		if k == "dimming" {
			val = 101
		}
		if err := sim.SetState(mac, hall, map[string]any{k: val}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("SetState %s: %v, want %q", state, err, want)
		}
	}
	if err := sim.SetState(mac, "0123456789abcdef0123456789abcd01", map[string]any{"nope": "On"}); err == nil || !strings.Contains(err.Error(), "of an Appliance Module") {
		t.Errorf("article: %v", err)
	}
	if d, _ := sim.Device(mac, hall); d.State["dimming"] != 75.0 {
		t.Errorf("a refused SetState changed the state: %v", d.State)
	}
	if _, ok := sim.Device(mac, "ffffffffffffffffffffffffffffffff"); ok {
		t.Error("a device the fleet does not have")
	}
	a, err := sim.Client().XML().Message(context.Background(), "message", "brightness=80")
	if err != nil || !a.OK {
		t.Fatalf("message: %v %v", a, err)
	}
	msgs, ok := sim.Messages(mac)
	if !ok || len(msgs) != 1 || msgs[0].Value != "brightness=80" {
		t.Errorf("messages %+v %v", msgs, ok)
	}
	if msgs[0].Type != "message" || msgs[0].Time.IsZero() {
		t.Errorf("message %+v", msgs[0])
	}
	if _, ok := sim.Messages("0000000000ff"); ok {
		t.Error("messages of a gateway the fleet does not have")
	}
	if reqs := sim.Requests(); len(reqs) != 1 || reqs[0].Status != 200 || reqs[0].Format != "xml" || reqs[0].Method != "POST" ||
		reqs[0].Path != "/v1/services/gateway/message" || reqs[0].MAC != mac || reqs[0].App != sim.Report().Clients[0].Client ||
		reqs[0].Time.IsZero() || reqs[0].Duration < 0 {
		t.Errorf("requests %+v", reqs)
	}
	sim.Reset()
	if d, _ := sim.Device(mac, hall); d.State["dimming"] != 40.0 {
		t.Errorf("after Reset: %v", d.State)
	}
}

// officeFleet is a fleet a test writes out: one account, one gateway,
// one thermostat.
const officeFleet = `
sign: md5
accounts:
  - myservice_id: abcdefabcdefabcdefabcdef
    api_keys:
      - {api_key: k1, secret: s1}
    gateways:
      - mac: 0a0b0c0d0e0f
        devices:
          - {sn: "00000000000000000000000000000001", type: Thermostat, name: Office}
`

// TestFleetOptions: a fleet a test writes out and one read from a file;
// a bad fleet is refused, naming the key.
func TestFleetOptions(t *testing.T) {
	t.Parallel()
	sim := gwsimtest.Start(t, gwsimtest.WithFleetYAML([]byte(officeFleet)))
	if c := sim.Credentials(); c.APIKey != "k1" || c.Secret != "s1" || c.MAC != "0a0b0c0d0e0f" || c.AccountID != "abcdefabcdefabcdefabcdef" {
		t.Errorf("credentials %+v", c)
	}
	a, err := sim.Client().Command(context.Background(), "00000000000000000000000000000001", "Thermostat", gwsimtest.F("cooling_point", "24.5"))
	if err != nil || !a.OK {
		t.Fatalf("%v %v", a, err)
	}
	if d, _ := sim.Device("0A0B0C0D0E0F", "00000000000000000000000000000001"); d.State["cooling_point"] != 24.5 || d.Name != "Office" {
		t.Errorf("device %+v", d)
	}

	file := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(file, []byte(officeFleet), 0o600); err != nil {
		t.Fatal(err)
	}
	if sim2 := gwsimtest.Start(t, gwsimtest.WithFleetFile(file)); sim2.Credentials() != sim.Credentials() || sim2.URL == sim.URL {
		t.Errorf("from the file: %+v at %s", sim2.Credentials(), sim2.URL)
	}
	for name, opt := range map[string]gwsimtest.Option{
		"none.yaml":           gwsimtest.WithFleetFile(filepath.Join(t.TempDir(), "none.yaml")),
		"empty":               gwsimtest.WithFleetYAML(nil),
		`unknown key "id"`:    gwsimtest.WithFleetYAML([]byte(strings.Replace(officeFleet, "myservice_id:", "id:", 1))),
		"myservice_id":        gwsimtest.WithFleetYAML([]byte(strings.Replace(officeFleet, "abcdefabcdefabcdefabcdef", "xyz", 1))),
		"WithFleetYAML: line": gwsimtest.WithFleetYAML([]byte("sign: md5\naccountz: []\n")),
	} {
		if _, err := gwsimtest.New(opt); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("a bad fleet: %v, want an error naming %q", err, name)
		}
	}
}

// TestFaultsNameWhatExists: faults naming a gateway, device or operation
// the fleet does not have are refused with the name, and change nothing.
func TestFaultsNameWhatExists(t *testing.T) {
	t.Parallel()
	sim := gwsimtest.Start(t, gwsimtest.WithAdminToken("tok"))
	mac := sim.Credentials().MAC
	if err := sim.ErrorRate("update_name", 1); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"0000000000ff":     sim.GatewayOffline("0000000000ff"),
		"abcd09":           sim.DeviceUnreachable(mac, "0123456789abcdef0123456789abcd09"),
		"slow_devices":     sim.DeviceSlow(mac, "0123456789abcdef0123456789abcd09", time.Second),
		"reboot":           sim.ErrorRate("reboot", 0.5),
		"from 0 to 1":      sim.ErrorRate("", 2),
		"scenario sn":      scenarioErr(sim, "steps: [{at: 0s, device_unreachable: {mac: a4c138f0e2b1, sn: 0123456789abcdef0123456789abcd09}}]"),
		"not an operation": scenarioErr(sim, "steps: [{at: 0s, error_rate: {operation: reboot, rate: 1}}]"),
	} {
		want := name
		if name == "scenario sn" {
			want = "steps[0].device_unreachable.sn"
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", name, err, want)
		}
	}
	if f := sim.Faults(); len(f.OfflineGateways)+len(f.UnreachableDevices)+len(f.SlowDevices) != 0 || f.OperationErrorRates["update_name"] != 1 || f.ErrorRate != 0 {
		t.Errorf("refused faults changed the faults: %+v", f)
	}
	a, _ := sim.Client().Rename(context.Background(), hall, "Never")
	if a.Status != 503 || a.Code != "injected_fault" {
		t.Errorf("rename under an error rate of 1: %v", a)
	}
	sim.ClearFaults()
	if a, _ := sim.Client().Rename(context.Background(), hall, "Hall 2"); !a.OK {
		t.Errorf("after ClearFaults: %v", a)
	}
}

func scenarioErr(sim *gwsimtest.Server, yaml string) error {
	_, err := sim.PlayScenario(yaml)
	return err
}

// TestScenarioSkipsWhatCannotHappen: a redis_loss step in memory is
// skipped, never in force nor counted; Restart starts the report afresh.
func TestScenarioSkipsWhatCannotHappen(t *testing.T) {
	t.Parallel()
	sim := gwsimtest.Start(t)
	sc, err := sim.PlayScenario("steps:\n  - {at: 0s, for: 1m, redis_loss: true}\n  - {at: 0s, for: 1m, latency: 1ms}\n")
	if err != nil {
		t.Fatal(err)
	}
	st := sc.Status()
	if !st.Running || st.Finished || st.End != time.Minute || len(st.Steps) != 2 || st.Steps[0].Skipped == "" || st.Steps[0].Active ||
		!st.Steps[1].Active || st.Steps[1].For != time.Minute || st.Steps[1].At != 0 || st.Steps[1].Label == "" {
		t.Errorf("status %+v", st)
	}
	sim.Client().Message(context.Background(), "message", "a=1")
	phases := sim.Report().Clients[0].Phases
	if len(phases) != 1 || strings.Contains(phases[0].Fault, "Redis") {
		t.Errorf("phases %+v", phases)
	}
	if err := sc.Restart(); err != nil {
		t.Fatal(err)
	}
	if n := len(sim.Report().Clients); n != 0 {
		t.Errorf("%d clients after a restart", n)
	}
	sc.Stop()
	if l := sim.Faults().Latency; l != 0 {
		t.Errorf("latency %s after stop", l)
	}
}

// TestAssertionsFail: the assertions fail, naming the rule, where the
// app broke one, and AssertClean fails when nothing was sent.
func TestAssertionsFail(t *testing.T) {
	t.Parallel()
	sim := gwsimtest.Start(t)
	r := &recorder{TB: t}
	sim.AssertClean(r)
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "no client has sent") {
		t.Errorf("AssertClean with no request: %q", r.errors)
	}
	// A wrong secret: signs_correctly broken.
	c := sim.Credentials()
	c.Secret = "wrong"
	a, _ := sim.Client().As(c).Message(context.Background(), "message", "a=1")
	if a.Code != "bad_signature" {
		t.Fatalf("wrong secret: %v", a)
	}
	r = &recorder{TB: t}
	sim.AssertJudgement(r, gwsimtest.ValidRequests)
	sim.AssertJudgement(r, gwsimtest.SignsCorrectly)
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "1 time") || strings.Contains(r.errors[0], "1 times") {
		t.Errorf("AssertJudgement: %q", r.errors)
	}
	r = &recorder{TB: t}
	sim.AssertClean(r)
	if len(r.errors) != 1 || !strings.Contains(sim.Broken(), "sign") {
		t.Errorf("AssertClean: %q / %q", r.errors, sim.Broken())
	}
	r = &recorder{TB: t}
	sim.AssertJudgement(r, "no_such_rule")
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "not a judgement") {
		t.Errorf("unknown judgement: %q", r.errors)
	}
	sim.ResetReport()
	if len(sim.Report().Clients) != 0 {
		t.Error("ResetReport")
	}
}

// TestCloseTwiceAndAfter: Close is idempotent; a closed server refuses a
// scenario.
func TestCloseTwiceAndAfter(t *testing.T) {
	sim, err := gwsimtest.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sim.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := sim.PlayScenario("steps: [{at: 0s, latency: 1ms}]"); err == nil {
		t.Error("a scenario on a closed server")
	}
}

// BenchmarkStart measures what a test pays for its own simulator.
func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		sim, err := gwsimtest.New()
		if err != nil {
			b.Fatal(err)
		}
		sim.Close()
	}
}

// TestReportWording: the client report's text says "1 time", and a
// client whose clock is right shows no skew, though its timestamps are
// cut to the second ("clock -1 s").
func TestReportWording(t *testing.T) {
	t.Parallel()
	sim := gwsimtest.Start(t)
	c := sim.Credentials()
	c.Secret = "wrong"
	sim.Client().As(c).Message(context.Background(), "message", "a=1")
	for range 5 {
		sim.Client().Message(context.Background(), "message", "a=1")
		time.Sleep(150 * time.Millisecond)
	}
	text := sim.Report().Text
	if !strings.Contains(text, ": 1 time;") || strings.Contains(text, "1 times") {
		t.Errorf("report text:\n%s", text)
	}
	if !strings.Contains(text, "from +0s to +0s") {
		t.Errorf("a right clock has a skew:\n%s", text)
	}
}

// TestLatitudeOptions: an app can be tried against a simulator that takes
// a faithful service's latitudes: the last WithMessageCap messages kept,
// answers over indented lines, its own code and field where no sentence
// states them, through real HTTP in both formats; a bad option is refused.
func TestLatitudeOptions(t *testing.T) {
	t.Parallel()
	sim := gwsimtest.Start(t, gwsimtest.WithMessageCap(2), gwsimtest.WithLatitudes(gwsimtest.PrettyAnswers, gwsimtest.OwnDetails, gwsimtest.ConnectionClose))
	ctx := context.Background()
	for _, c := range []*gwsimtest.Client{sim.Client(), sim.Client().XML()} {
		for i := range 3 {
			if a, err := c.Message(ctx, "message", fmt.Sprintf("cap=%d", i)); err != nil || !a.OK {
				t.Fatalf("message: %v %v", a, err)
			}
		}
		if msgs, _ := sim.Messages(sim.Credentials().MAC); len(msgs) != 2 || msgs[0].Value != "cap=1" || msgs[1].Value != "cap=2" {
			t.Errorf("WithMessageCap(2) keeps %+v", msgs)
		}
		ok, err := c.Command(ctx, hall, "Light Dimmer", gwsimtest.F("dimming", "41"))
		if err != nil || !ok.OK || strings.Count(strings.TrimSpace(string(ok.Body)), "\n") < 2 {
			t.Errorf("want success over indented lines: %v %v %q", ok, err, ok.Body)
		}
		bad, err := c.Command(ctx, hall, "Light Dimmer", gwsimtest.F("dimming", "0"))
		if err != nil || bad.Status != 400 || bad.Code != "invalid_field" || bad.Field != "dimming" {
			t.Errorf("an invalid dimming keeps what CONTRACT states: %v %v", bad, err)
		}
		cred := sim.Credentials()
		cred.Secret = "not-the-secret"
		sign, err := c.As(cred).Command(ctx, hall, "Light Dimmer", gwsimtest.F("dimming", "42"))
		if err != nil || sign.Status != 401 || sign.Code != "bad_signature" || sign.Field != "" {
			t.Errorf("a wrong sign names no field under OwnDetails: %v %v", sign, err)
		}
	}
	if _, err := gwsimtest.New(gwsimtest.WithMessageCap(0)); err == nil {
		t.Error("WithMessageCap(0) accepted")
	}
	if _, err := gwsimtest.New(gwsimtest.WithLatitudes(gwsimtest.Latitude(99))); err == nil {
		t.Error("an unknown latitude accepted")
	}
}

// TestAssertJudgementKnowsEveryJudgement: AssertJudgement takes every
// judgement the client report gives, each a constant of the package, and
// a clean app passes each.
func TestAssertJudgementKnowsEveryJudgement(t *testing.T) {
	t.Parallel()
	sim := gwsimtest.Start(t)
	if a, err := sim.Client().Message(context.Background(), "message", "a=1"); err != nil || !a.OK {
		t.Fatalf("message: %v %v", a, err)
	}
	constants := []string{gwsimtest.ValidRequests, gwsimtest.NoForeignFields, gwsimtest.SignsCorrectly, gwsimtest.ClockInWindow,
		gwsimtest.WaitsOutRetryAfter, gwsimtest.NoResentRefusedRequest, gwsimtest.NoReplayedRequest, gwsimtest.BacksOffWithoutRetryAfter,
		gwsimtest.KnownDevicesOnly, gwsimtest.MatchesDeviceTypes, gwsimtest.OwnAccountOnly}
	var ids []string
	for _, j := range sim.Report().Clients[0].Judgements {
		ids = append(ids, j.ID)
	}
	if !slices.Equal(ids, constants) {
		t.Errorf("the report's judgements are %q, the package's constants %q", ids, constants)
	}
	for _, id := range ids {
		r := &recorder{TB: t}
		sim.AssertJudgement(r, id)
		if len(r.errors) != 0 {
			t.Errorf("AssertJudgement(%q) of a clean app: %q", id, r.errors)
		}
	}
}

// TestFaultsRoundTrip: every field of Faults reaches the simulator and
// comes back from Faults, normalised (macs in lower case, Retry-After in
// whole seconds), while the Faults a test wrote stay as written.
func TestFaultsRoundTrip(t *testing.T) {
	t.Parallel()
	sim := gwsimtest.Start(t)
	mac := sim.Credentials().MAC
	upper := strings.ToUpper(mac)
	in := gwsimtest.Faults{
		Latency:             time.Millisecond,
		ErrorRate:           0.25,
		OperationErrorRates: map[string]float64{"message": 0.5},
		OfflineGateways:     []string{upper},
		UnreachableDevices:  []gwsimtest.DeviceRef{{MAC: mac, SN: hall}},
		SlowDevices:         []gwsimtest.SlowDevice{{DeviceRef: gwsimtest.DeviceRef{MAC: mac, SN: "0123456789abcdef0123456789abcd01"}, Latency: 2 * time.Millisecond}},
		RetryAfter:          "1500ms",
		RetryAfterDate:      true,
	}
	if err := sim.SetFaults(in); err != nil {
		t.Fatal(err)
	}
	if in.OfflineGateways[0] != upper {
		t.Errorf("SetFaults changed the caller's Faults: %q", in.OfflineGateways)
	}
	want := in
	want.OfflineGateways = []string{mac}
	want.RetryAfter = "2"
	if got := sim.Faults(); !reflect.DeepEqual(got, want) {
		t.Errorf("Faults() = %+v\nwant %+v", got, want)
	}
	a, err := sim.Client().Message(context.Background(), "message", "a=1")
	if err != nil || a.Status != 504 || a.Code != "gateway_offline" {
		t.Errorf("offline by SetFaults: %v %v", a, err)
	}
	if err := sim.SetFaults(gwsimtest.Faults{RetryAfter: "soon"}); err == nil || !strings.Contains(err.Error(), "retry_after") {
		t.Errorf("a bad RetryAfter: %v, want an error naming retry_after", err)
	}
	sim.ClearFaults()
	if got := sim.Faults(); !reflect.DeepEqual(got, gwsimtest.Faults{}) {
		t.Errorf("after ClearFaults: %+v, want the zero Faults", got)
	}
}

// TestReportPhases: a fault set by hand gets a phase of its own in the
// report, with its errors by code and, once it has ended and a request
// succeeded, the recovery; the text holds what the fields leave out.
func TestReportPhases(t *testing.T) {
	t.Parallel()
	sim := gwsimtest.Start(t)
	ctx := context.Background()
	if err := sim.GatewayOffline(sim.Credentials().MAC); err != nil {
		t.Fatal(err)
	}
	if a, _ := sim.Client().Message(ctx, "message", "a=1"); a.Code != "gateway_offline" {
		t.Fatalf("offline: %v", a)
	}
	sim.ClearFaults()
	time.Sleep(1100 * time.Millisecond) // Retry-After: 1
	if a, _ := sim.Client().Message(ctx, "message", "a=2"); !a.OK {
		t.Fatalf("after the fault: %v", a)
	}
	rep := sim.Report()
	if len(rep.Clients) != 1 {
		t.Fatalf("clients %+v", rep.Clients)
	}
	c := rep.Clients[0]
	if c.Requests != 2 || c.ID == "" || !strings.HasSuffix(c.Client, "…") {
		t.Errorf("client %+v", c)
	}
	if len(c.Phases) != 1 {
		t.Fatalf("phases %+v", c.Phases)
	}
	p := c.Phases[0]
	if !strings.Contains(p.Fault, "set by hand") || p.Requests != 1 || p.Errors != 1 || p.Codes["gateway_offline"] != 1 ||
		!p.Ended || !p.Recovered || p.RecoveredAfter <= 0 {
		t.Errorf("phase %+v", p)
	}
	if j := c.Judgement(gwsimtest.WaitsOutRetryAfter); !j.Passed || j.Name == "" || j.Violations != 0 || j.Latest != "" {
		t.Errorf("judgement %+v", j)
	}
	if j := c.Judgement("no_such_rule"); j.ID != "no_such_rule" || j.Passed {
		t.Errorf("an unknown judgement: %+v", j)
	}
	if !strings.Contains(rep.Text, "errors received:") || !strings.Contains(rep.Text, "every judgement passed") {
		t.Errorf("text:\n%s", rep.Text)
	}
}
