package gwsimtest_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator/gwsimtest"
)

// exampleTB is the testing.TB of a runnable example, which has no t of
// its own: it prints what an assertion reports, and done runs what Start
// left to the end of the test (closing the simulator).
type exampleTB struct {
	testing.TB
	cleanups []func()
}

func (t *exampleTB) Helper() {}
func (t *exampleTB) Errorf(format string, args ...any) {
	fmt.Println("FAIL", strings.TrimSpace(fmt.Sprintf(format, args...)))
}
func (t *exampleTB) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (t *exampleTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleTB) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }

func (t *exampleTB) done() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// The whole API in one place: a simulator started with every option, its
// address and credentials, the signing client, the Go calls that read and
// set state, fault injection, a scenario, and the client report with its
// assertions. In a test, t is the test's own; here it prints what the
// assertions report.
func ExampleServer_surface() {
	t := &exampleTB{}
	defer t.done()
	ctx := context.Background()
	const hall = "0123456789abcdef0123456789abcd06" // the Hall dimmer of the demo fleet

	// Start: every option (the demo fleet, read from its fleet file).
	latitudes := []gwsimtest.Latitude{gwsimtest.ConnectionClose, gwsimtest.PrettyAnswers, gwsimtest.OwnDetails}
	options := []gwsimtest.Option{
		gwsimtest.WithFleetFile("../../fixtures/demo-fleet.yaml"),
		gwsimtest.WithAdminToken("0123456789abcdef0123456789abcdef"),
		gwsimtest.WithRejectReplays(),
		gwsimtest.WithRateLimit(100),
		gwsimtest.WithMessageCap(10),
		gwsimtest.WithLatitudes(latitudes...),
		gwsimtest.WithClock(time.Now),
		gwsimtest.WithLogger(slog.New(slog.DiscardHandler)),
	}
	sim := gwsimtest.Start(t, options...)
	fmt.Println("url:", strings.HasPrefix(sim.URL, "http://127.0.0.1:"), "admin token:", sim.AdminToken != "")

	// Address and credentials: what the app under test is given.
	cred := sim.Credentials()
	ts := sim.Timestamp(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	fmt.Println("credentials:", cred.AccountID, cred.APIKey, cred.Secret != "", cred.MAC)
	fmt.Println("sign:", ts, cred.Sign(ts))
	health := httptest.NewRecorder()
	sim.Handler().ServeHTTP(health, httptest.NewRequest(http.MethodGet, sim.URL+"/_sim/health", nil))
	fmt.Println("handler:", health.Code)

	// The signing client: JSON, XML, other credentials.
	client := sim.Client()
	answer, err := client.Command(ctx, hall, "Light Dimmer", gwsimtest.F("dimming", "30"))
	if err != nil {
		panic(err)
	}
	fmt.Println("command:", answer.String(), answer.Status, answer.OK, len(answer.Body) > 0)
	answer, _ = client.XML().Rename(ctx, hall, "Hall")
	fmt.Println("rename:", answer)
	answer, _ = client.Message(ctx, "message", "brightness=80")
	fmt.Println("message:", answer)
	answer, _ = client.Command(ctx, hall, "Light Dimmer", gwsimtest.Field{Name: "dimming", Value: "101"})
	fmt.Println("refused:", answer.Status, answer.Code, answer.Field, answer.Message != "")
	wrong := cred
	wrong.Secret = "not-the-secret"
	answer, _ = client.As(wrong).Message(ctx, "message", "brightness=81")
	fmt.Println("wrong secret:", answer.Code)

	// The client report and its assertions.
	sim.AssertJudgement(t, gwsimtest.SignsCorrectly)
	sim.AssertClean(t)
	fmt.Print("broken:\n", sim.Broken())
	report := sim.Report()
	app := report.Clients[0]
	fmt.Println("report:", app.Client, app.ID != "", app.Requests, strings.Contains(report.Text, "judgements failed"))
	for _, id := range []string{gwsimtest.ValidRequests, gwsimtest.NoForeignFields, gwsimtest.SignsCorrectly,
		gwsimtest.ClockInWindow, gwsimtest.WaitsOutRetryAfter, gwsimtest.NoResentRefusedRequest, gwsimtest.NoReplayedRequest,
		gwsimtest.BacksOffWithoutRetryAfter, gwsimtest.KnownDevicesOnly, gwsimtest.MatchesDeviceTypes, gwsimtest.OwnAccountOnly} {
		if j := app.Judgement(id); !j.Passed {
			fmt.Printf("  %s (%s): %d, %s\n", j.ID, j.Name, j.Violations, j.Latest)
		}
	}
	fmt.Println("judgements:", len(app.Judgements))
	sim.ResetReport()

	// State: read, set as if the device changed by itself, messages, the
	// journal, and the fleet as loaded again.
	d, ok := sim.Device(cred.MAC, hall)
	fmt.Println("device:", ok, d.SN == hall, d.Type, d.Name, d.State["dimming"])
	if err := sim.SetState(cred.MAC, hall, map[string]any{"dimming": 75}); err != nil {
		panic(err)
	}
	fmt.Println("set state:", sim.SetState(cred.MAC, hall, map[string]any{"dimming": 101}) != nil)
	messages, _ := sim.Messages(cred.MAC)
	m := messages[0]
	fmt.Println("messages:", len(messages), m.Type, m.Value, !m.Time.IsZero())
	requests := sim.Requests()
	r := requests[0]
	fmt.Println("requests:", len(requests), r.Method, r.Path, r.Format, r.Status, r.MAC, r.SN == hall, r.App, !r.Time.IsZero(), r.Duration >= 0)
	r = requests[3]
	fmt.Println("  refused:", r.Status, r.Code, r.Field)
	sim.Reset()
	d, _ = sim.Device(cred.MAC, hall)
	fmt.Println("reset:", d.State["dimming"])

	// Faults: one call each, or all at once.
	for _, err := range []error{
		sim.GatewayOffline(cred.MAC),
		sim.DeviceUnreachable(cred.MAC, hall),
		sim.DeviceSlow(cred.MAC, "0123456789abcdef0123456789abcd04", 20*time.Millisecond),
		sim.ErrorRate("update_name", 1),
		sim.Latency(time.Millisecond),
	} {
		if err != nil {
			panic(err)
		}
	}
	f := sim.Faults()
	fmt.Println("faults:", f.OfflineGateways, f.UnreachableDevices[0].SN == hall, f.SlowDevices[0].Latency, f.OperationErrorRates, f.Latency)
	err = sim.SetFaults(gwsimtest.Faults{
		Latency:             0,
		ErrorRate:           0,
		OperationErrorRates: map[string]float64{"message": 0.5},
		OfflineGateways:     []string{"a4c138f0e2b2"},
		UnreachableDevices:  []gwsimtest.DeviceRef{{MAC: cred.MAC, SN: "0123456789abcdef0123456789abcd01"}},
		SlowDevices:         []gwsimtest.SlowDevice{{DeviceRef: gwsimtest.DeviceRef{MAC: cred.MAC, SN: hall}, Latency: time.Millisecond}},
		RetryAfter:          "none",
		RetryAfterDate:      false,
	})
	f = sim.Faults()
	fmt.Println("set faults:", err, f.ErrorRate, f.OfflineGateways, f.RetryAfter, f.RetryAfterDate)
	fmt.Println("bad faults:", sim.ErrorRate("reboot", 1))
	sim.ClearFaults()

	// A scenario: a timeline of faults, its status, and how the app fared
	// under each fault.
	sc, err := sim.PlayScenario(`
name: short outage
steps:
  - {at: 0s, for: 400ms, gateway_offline: a4c138f0e2b1}
`)
	if err != nil {
		panic(err)
	}
	st := sc.Status()
	step := st.Steps[0]
	fmt.Println("scenario:", st.Name, st.Running, st.Finished, st.Elapsed < st.End, st.End)
	fmt.Println("  step:", step.Label, step.At, step.For, step.Active, step.Done, step.Skipped == "")
	answer, _ = client.Message(ctx, "message", "brightness=82")
	fmt.Println("  during:", answer.Code)
	if err := sc.Wait(ctx); err != nil {
		panic(err)
	}
	answer, _ = client.Message(ctx, "message", "brightness=83")
	fmt.Println("  after:", answer.Status, sc.Status().Finished)
	p := sim.Report().Clients[0].Phases[0]
	fmt.Println("  phase:", p.Fault, p.Requests, p.Errors, p.RetriedEarly, p.Codes, p.Ended, p.Recovered, p.RecoveredAfter < time.Second)
	if err := sc.Restart(); err != nil {
		panic(err)
	}
	fmt.Println("  restarted:", sc.Status().Running, len(sim.Report().Clients))
	sc.Stop()

	// New and Close: a simulator without a t, here of a fleet the test
	// writes out.
	other, err := gwsimtest.New(gwsimtest.WithFleetYAML([]byte(`
sign: md5
accounts:
  - myservice_id: abcdefabcdefabcdefabcdef
    api_keys: [{api_key: k1, secret: s1}]
    gateways: [{mac: 0a0b0c0d0e0f, devices: [{sn: "00000000000000000000000000000001", type: Thermostat, name: Office}]}]
`)))
	if err != nil {
		panic(err)
	}
	fmt.Println("new:", other.Credentials().MAC, other.Close())
	// Output:
	// url: true admin token: true
	// credentials: 5f3a9c0e1b2d4f6a8c0e1b2d demo-key true a4c138f0e2b1
	// sign: 20250102030405 828799fc4f9c841ea90ece4eceaac8dc
	// handler: 200
	// command: 200 success 200 true true
	// rename: 200 success
	// message: 200 success
	// refused: 400 invalid_field dimming true
	// wrong secret: bad_signature
	// FAIL gwsimtest: client demo… broke "app signed every request correctly" 1 time; latest: message (json): the sign does not match md5(api_key + secret + timestamp)
	// FAIL gwsimtest: the client report has broken rules:
	// client demo… broke "app sent only valid requests" 1 time; latest: command Light Dimmer (json): invalid_field (dimming): dimming must be an integer from 1 to 100, not "101"
	// client demo… broke "app signed every request correctly" 1 time; latest: message (json): the sign does not match md5(api_key + secret + timestamp)
	// broken:
	// client demo… broke "app sent only valid requests" 1 time; latest: command Light Dimmer (json): invalid_field (dimming): dimming must be an integer from 1 to 100, not "101"
	// client demo… broke "app signed every request correctly" 1 time; latest: message (json): the sign does not match md5(api_key + secret + timestamp)
	// report: demo… true 5 true
	//   valid_requests (app sent only valid requests): 1, command Light Dimmer (json): invalid_field (dimming): dimming must be an integer from 1 to 100, not "101"
	//   signs_correctly (app signed every request correctly): 1, message (json): the sign does not match md5(api_key + secret + timestamp)
	// judgements: 11
	// device: true true Light Dimmer Hall 30
	// set state: true
	// messages: 1 message brightness=80 true
	// requests: 5 POST /v1/services/gateway/command json 200 a4c138f0e2b1 true demo… true true
	//   refused: 400 invalid_field dimming
	// reset: 40
	// faults: [a4c138f0e2b1] true 20ms map[update_name:1] 1ms
	// set faults: <nil> 0 [a4c138f0e2b2] none false
	// bad faults: gwsimtest: faults: operation_error_rates.reboot is not an operation: use command, message or update_name
	// scenario: short outage true false true 400ms
	//   step: gateway a4c138f0e2b1 offline (0s for 400ms) 0s 400ms true false true
	//   during: gateway_offline
	//   after: 200 true
	//   phase: gateway a4c138f0e2b1 offline (0s for 400ms) 1 1 0 map[gateway_offline:1] true true true
	//   restarted: true 0
	// new: 0a0b0c0d0e0f <nil>
}
