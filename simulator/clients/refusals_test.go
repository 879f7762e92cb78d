package clients_test

import (
	"bytes"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// feeds is, for each error code gwsim can answer, the judgement of the
// client report it feeds: the request it refused fails that judgement,
// or (a wait) the requests after it are judged by it. docs/clients.md
// lists the same.
var feeds = map[string]string{
	device.CodeInvalidField:         clients.JudgeValid,
	device.CodeMissingField:         clients.JudgeValid,
	device.CodeUnexpectedField:      clients.JudgeValid,
	device.CodeMalformedBody:        clients.JudgeValid,
	device.CodeBadRequest:           clients.JudgeValid,
	device.CodeUnsupportedMediaType: clients.JudgeValid,
	device.CodeBodyTooLarge:         clients.JudgeValid,
	device.CodeMethodNotAllowed:     clients.JudgeValid,
	device.CodeTimeout:              clients.JudgeValid,
	device.CodeUnknownAPIKey:        clients.JudgeOwnAccount,
	device.CodeAccountMismatch:      clients.JudgeOwnAccount,
	device.CodeBadSignature:         clients.JudgeSign,
	device.CodeStaleTimestamp:       clients.JudgeClock,
	device.CodeReplayedRequest:      clients.JudgeNoReplay,
	device.CodeGatewayNotFound:      clients.JudgeKnown,
	device.CodeDeviceNotFound:       clients.JudgeKnown,
	device.CodeTypeMismatch:         clients.JudgeTypes,
	// Waits: the requests sent after them are judged against their
	// Retry-After, or the back-off floor without one.
	device.CodeRateLimited:        clients.JudgeRetryAfter,
	device.CodeGatewayOffline:     clients.JudgeRetryAfter,
	device.CodeInjectedFault:      clients.JudgeRetryAfter,
	device.CodeDeviceUnreachable:  clients.JudgeRetryAfter,
	device.CodeStorageUnavailable: clients.JudgeRetryAfter,
	device.CodeStorageFailed:      clients.JudgeBackoff,
	// Never on an operation's path: a path that is no operation, the
	// admin API's token.
	device.CodeNotFound:     "",
	device.CodeUnauthorized: "",
}

// TestEveryCodeFeedsAJudgement: every error code gwsim can answer is in
// feeds, and each that refuses a request for what the request itself
// was fails its judgement when an operation's answer carries it.
func TestEveryCodeFeedsAJudgement(t *testing.T) {
	for code := range server.Codes() {
		if _, ok := feeds[code]; !ok {
			t.Errorf("gwsim can answer %s, which feeds no judgement of the client report", code)
		}
	}
	waits := []string{clients.JudgeRetryAfter, clients.JudgeBackoff}
	for code, id := range feeds {
		if id == "" || slices.Contains(waits, id) {
			continue
		}
		rec := clients.New(clients.Config{Trusted: true})
		now := time.Now()
		body := []byte(`{"control":{"api_key":"key-a","timestamp":"` + now.UTC().Format("20060102150405") +
			`","sign":"00","myservice_id":"` + simtest.AccountA + `","mac":"` + simtest.MACA + `","sn":"` + simtest.SN('a', 0) +
			`","type":"Light Dimmer","dimming":"30"}}`)
		status := server.StatusOf(code)
		h := http.Header{"Content-Type": {"application/json"}}
		ans := []byte(`{"status":"error","error":{"code":"` + code + `","message":"device x is an Appliance Module, not a Light Dimmer"}}`)
		rec.Observe(clients.Exchange{Time: now, Done: now, Path: device.SendCommand.Path(), ContentType: "application/json",
			Body: body, Status: status, Header: h, Answer: ans})
		c, _ := rec.Report().Client(clients.Mask("key-a"))
		if j := c.Judgement(id); j.Passed {
			t.Errorf("%d %s: %s passed", status, code, id)
		}
	}
}

// TestEveryRefusalIsJudged: a command to a device of another type (409
// type_mismatch), an api_key gwsim does not know (401 unknown_api_key)
// and a myservice_id of another account (403 account_mismatch) each fail
// a named judgement, in both formats; the mismatched command is covered
// under the device's real type. A faithful app that sends each device
// its own type passes.
func TestEveryRefusalIsJudged(t *testing.T) {
	for _, format := range []string{"json", "xml"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			sim := simtest.Start(t, simulator.Options{AdminToken: "tok"})
			a := newApp(t, sim.URL(), format)
			appliance := simtest.SN('a', 0) // an Appliance Module
			a.want(a.post(pathCommand, a.body(timestamp(time.Now()), simtest.MACA, kv{"sn", appliance}, kv{"type", "Appliance Module"}, kv{"io", "On"})), 200)
			cleanReport(t, sim.Client, 1)

			a.want(a.post(pathCommand, a.body(timestamp(time.Now()), simtest.MACA, dimming(appliance, "30")...)), http.StatusConflict)
			failsAtLeast(t, sim.Client, clients.JudgeTypes, 1, "command Appliance Module ("+format+")", "type_mismatch")
			app := clientA(t, report(t, sim.Client))
			for _, cv := range app.Coverage {
				if cv.Type == "Light Dimmer" {
					t.Errorf("the mismatched command is covered under the type the app claimed: %+v", app.Coverage)
				}
				if cv.Type == "Appliance Module" && cv.Sent != 2 {
					t.Errorf("coverage of Appliance Module: %+v, want 2 sent", cv)
				}
			}

			// Another account's myservice_id with the app's own key.
			other := bytes.Replace(a.body(timestamp(time.Now()), simtest.MACA, kv{"sn", appliance}, kv{"type", "Appliance Module"}, kv{"io", "Off"}),
				[]byte(simtest.AccountA), []byte(simtest.AccountB), 1)
			a.want(a.post(pathCommand, other), http.StatusForbidden)
			failsAtLeast(t, sim.Client, clients.JudgeOwnAccount, 1, "account_mismatch")

			// An api_key gwsim does not know: judged under that key.
			unknown := bytes.Replace(a.body(timestamp(time.Now()), simtest.MACA, kv{"sn", appliance}, kv{"type", "Appliance Module"}, kv{"io", "Off"}),
				[]byte(simtest.KeyA), []byte("key-unknown"), 1)
			a.want(a.post(pathCommand, unknown), http.StatusUnauthorized)
			c, ok := report(t, sim.Client).Client(clients.Mask("key-unknown"))
			if j := c.Judgement(clients.JudgeOwnAccount); !ok || j.Passed {
				t.Errorf("an unknown api_key: %+v", c)
			}
		})
	}
}
