package gwsimtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gwdmi/gwtools/simulator/gwsimtest"
)

// lightApp is the kind of code an app has: it dims a light through the
// gateway's HTTP interface with its own HTTP client, signing each request.
type lightApp struct {
	base                      string
	apiKey, secret, account   string
	mac                       string
	sign                      func(timestamp string) string
	now                       func() string
	http                      *http.Client
	gatewayOffline, succeeded int
}

// errOffline is what the app makes of 504 gateway_offline.
var errOffline = errors.New("the gateway is offline")

func (a *lightApp) dim(sn string, level int) error {
	ts := a.now()
	body, _ := json.Marshal(map[string]any{"control": map[string]any{
		"api_key": a.apiKey, "timestamp": ts, "sign": a.sign(ts), "myservice_id": a.account,
		"mac": a.mac, "sn": sn, "type": "Light Dimmer", "dimming": level,
	}})
	res, err := a.http.Post(a.base+"/v1/services/gateway/command", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var answer struct {
		Status string `json:"status"`
		Error  struct{ Code, Message string }
	}
	json.NewDecoder(res.Body).Decode(&answer)
	switch {
	case answer.Status == "success":
		a.succeeded++
		return nil
	case answer.Error.Code == "gateway_offline":
		a.gatewayOffline++
		return errOffline
	}
	return fmt.Errorf("%d %s: %s", res.StatusCode, answer.Error.Code, answer.Error.Message)
}

func newApp(sim *gwsimtest.Server) *lightApp {
	c := sim.Credentials()
	return &lightApp{base: sim.URL, apiKey: c.APIKey, secret: c.Secret, account: c.AccountID, mac: c.MAC,
		sign: c.Sign, now: func() string { return sim.Timestamp(time.Now()) }, http: &http.Client{Timeout: 5 * time.Second}}
}

// The Hall dimmer of the demo fleet.
const hall = "0123456789abcdef0123456789abcd06"

// An app's own HTTP client, tested against the simulator: the command
// reaches the device, and the app broke no rule of the interface. A test
// calls gwsimtest.Start(t), which closes the simulator when the test ends;
// an example has no t, so it uses New and Close.
func Example() {
	sim, err := gwsimtest.New() // the demo fleet
	if err != nil {
		panic(err)
	}
	defer sim.Close()

	app := newApp(sim)
	if err := app.dim(hall, 30); err != nil {
		fmt.Println("dim:", err)
	}
	d, _ := sim.Device(sim.Credentials().MAC, hall)
	fmt.Println(d.Name, "dimming", d.State["dimming"])
	fmt.Println(sim.Broken() == "")
	// Output:
	// Hall dimming 30
	// true
}

// A fault handled: the gateway goes offline, the app gets 504
// gateway_offline and says so; once the fault is cleared its next try
// succeeds.
func ExampleServer_GatewayOffline() {
	sim, err := gwsimtest.New()
	if err != nil {
		panic(err)
	}
	defer sim.Close()
	app := newApp(sim)

	if err := sim.GatewayOffline(sim.Credentials().MAC); err != nil {
		panic(err)
	}
	err = app.dim(hall, 55)
	fmt.Println(errors.Is(err, errOffline))

	sim.ClearFaults()
	fmt.Println(app.dim(hall, 55))
	d, _ := sim.Device(sim.Credentials().MAC, hall)
	fmt.Println(d.State["dimming"], app.gatewayOffline, app.succeeded)
	// Output:
	// true
	// <nil>
	// 55 1 1
}

// A client-report assertion: an app that sends a field the device type
// does not have breaks "valid requests"; the report says which and when.
// In a test: sim.AssertJudgement(t, gwsimtest.ValidRequests).
func ExampleServer_Report() {
	sim, err := gwsimtest.New()
	if err != nil {
		panic(err)
	}
	defer sim.Close()

	// Relay2 belongs to an Appliance Module Plus, not to a dimmer.
	answer, err := sim.Client().Command(context.Background(), hall, "Light Dimmer",
		gwsimtest.F("dimming", "20"), gwsimtest.F("Relay2", "On"))
	if err != nil {
		panic(err)
	}
	fmt.Println(answer.Status, answer.Code, answer.Field)

	client := sim.Report().Clients[0]
	j := client.Judgement(gwsimtest.ValidRequests)
	fmt.Println(j.Passed, j.Violations)
	// Output:
	// 400 unexpected_field Relay2
	// false 1
}

// A scenario in a test: a timeline of faults, here a gateway offline
// for its first 200 ms.
func ExampleServer_PlayScenario() {
	sim, err := gwsimtest.New()
	if err != nil {
		panic(err)
	}
	defer sim.Close()

	sc, err := sim.PlayScenario(`
name: short outage
steps:
  - {at: 0s, for: 200ms, gateway_offline: a4c138f0e2b1}
`)
	if err != nil {
		panic(err)
	}
	answer, _ := sim.Client().Message(context.Background(), "message", "brightness=80")
	fmt.Println(answer.Status, answer.Code)

	sc.Wait(context.Background())
	answer, _ = sim.Client().Message(context.Background(), "message", "brightness=80")
	fmt.Println(answer.Status, sc.Status().Finished)
	// Output:
	// 504 gateway_offline
	// 200 true
}
