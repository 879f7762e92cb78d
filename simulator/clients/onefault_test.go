package clients_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/scenario"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// phasesOf is account A's app's fault sections by their label up to
// " (" (a scenario step's timing) or all of it.
func phasesOf(t *testing.T, c *simtest.Client) map[string]clients.Phase {
	t.Helper()
	out := map[string]clients.Phase{}
	for _, p := range clientA(t, report(t, c)).Phases {
		out[strings.SplitN(p.Phase, " (", 2)[0]] = p
	}
	return out
}

// TestEachRequestCountedUnderTheFaultThatAnsweredIt: with faults that
// overlap (two error rates on commands, one on renames, a latency on
// everything), each request is counted once, under the fault gwsim
// applied: commands under the highest command rate (gwsim keeps the
// highest), renames under theirs, the messages that only the latency
// met under the latency; the sections add up to the requests. In both
// formats.
func TestEachRequestCountedUnderTheFaultThatAnsweredIt(t *testing.T) {
	for _, format := range []string{"json", "xml"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			sc, err := scenario.Parse([]byte(`
name: overlapping
autostart: false
steps:
  - {at: 0s, error_rate: {operation: command, rate: 0.5}}
  - {at: 0s, error_rate: {operation: command, rate: 1}, retry_after: none}
  - {at: 0s, error_rate: {operation: update_name, rate: 1}, retry_after: none}
  - {at: 0s, latency: 10ms}
`))
			if err != nil {
				t.Fatal(err)
			}
			p := scenario.NewPlayer(sc, nil)
			sim := simtest.Start(t, simulator.Options{AdminToken: "tok", ClientFaults: p.Faults, Admin: p.Routes()})
			t.Cleanup(p.Stop)
			p.Attach(sim.Server)
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			a := newApp(t, sim.URL(), format)
			dim := simtest.SN('a', 5)
			for i, level := range []string{"21", "22"} {
				a.want(a.post(pathCommand, a.body(timestamp(time.Now().Add(time.Duration(-i)*time.Second)), simtest.MACA, dimming(dim, level)...)), 503)
				time.Sleep(clients.BackoffFloor + 50*time.Millisecond)
			}
			a.want(a.post(pathName, a.body(timestamp(time.Now()), simtest.MACA, kv{"sn", dim}, kv{"name", "Hall"})), 503)
			time.Sleep(clients.BackoffFloor + 50*time.Millisecond)
			msg := a.body(timestamp(time.Now()), simtest.MACA, kv{"message_type", "message"}, kv{"message_value", "brightness=80"})
			a.want(a.post("/v1/services/gateway/message", msg), 200)

			ph := phasesOf(t, sim.Client)
			var total uint64
			for label, p := range ph {
				total += p.Requests
				t.Logf("%s: %d requests, %d errors", label, p.Requests, p.Errors)
			}
			if total != 4 {
				t.Errorf("the sections count %d requests, want 4 (each once): %+v", total, ph)
			}
			if p := ph["100% errors on command, no Retry-After"]; p.Requests != 2 || p.Codes["injected_fault"] != 2 {
				t.Errorf("the highest command rate: %+v", p)
			}
			if p, ok := ph["50% errors on command"]; ok && p.Requests != 0 {
				t.Errorf("the lower command rate, which gwsim's merge did not keep: %+v", p)
			}
			if p := ph["100% errors on update_name, no Retry-After"]; p.Requests != 1 {
				t.Errorf("the renames' rate: %+v", p)
			}
			if p := ph["latency 10ms"]; p.Requests != 1 || p.Errors != 0 {
				t.Errorf("the latency, which answered the message alone: %+v", p)
			}
			cleanReport(t, sim.Client, 4)
		})
	}
}

// TestFaultsSetByHandHaveSectionsOfTheirOwn: faults set through PUT and
// DELETE /_sim/faults get sections as a scenario's steps do: named by
// what they do and when they were set, each request under the one that
// answered it, ended when a later PUT or DELETE turns them off, and
// the app's recovery said. In both formats.
func TestFaultsSetByHandHaveSectionsOfTheirOwn(t *testing.T) {
	for _, format := range []string{"json", "xml"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			sim := simtest.Start(t, simulator.Options{AdminToken: "tok"})
			c := sim.Client
			a := newApp(t, sim.URL(), format)
			dim, porch := simtest.SN('a', 5), simtest.SN('c', 0)
			c.AdminJSON(http.MethodPut, "/_sim/faults", `{"error_rate":1,"offline_gateways":["`+simtest.MACA2+`"],"retry_after":"none"}`, nil)
			a.want(a.post(pathCommand, a.body(timestamp(time.Now()), simtest.MACA2, dimming(porch, "31")...)), 504)
			a.want(a.post(pathCommand, a.body(timestamp(time.Now()), simtest.MACA, dimming(dim, "31")...)), 503)
			time.Sleep(clients.BackoffFloor + 50*time.Millisecond)
			// The error rate ends, the gateway stays offline.
			c.AdminJSON(http.MethodPut, "/_sim/faults", `{"offline_gateways":["`+simtest.MACA2+`"],"retry_after":"none"}`, nil)
			a.want(a.post(pathCommand, a.body(timestamp(time.Now()), simtest.MACA2, dimming(porch, "32")...)), 504)
			a.want(a.post(pathCommand, a.body(timestamp(time.Now()), simtest.MACA, dimming(dim, "32")...)), 200)
			time.Sleep(clients.BackoffFloor + 50*time.Millisecond)
			c.AdminJSON(http.MethodDelete, "/_sim/faults", "", nil)
			a.want(a.post(pathCommand, a.body(timestamp(time.Now()), simtest.MACA2, dimming(porch, "33")...)), 200)

			ph := map[string]clients.Phase{}
			for label, p := range phasesOf(t, c) {
				what, ok := strings.CutPrefix(label, "set by hand at ")
				if !ok || len(what) < len("15:04:05: ") {
					t.Fatalf("a section %q not named as set by hand", label)
				}
				ph[what[len("15:04:05: "):]] = p
			}
			gw := ph["gateway "+simtest.MACA2+" offline, no Retry-After"]
			if gw.Requests != 2 || gw.Codes["gateway_offline"] != 2 || gw.Recovery == nil || !gw.Recovery.Recovered {
				t.Errorf("the offline gateway: %+v %+v", gw, gw.Recovery)
			}
			rate := ph["100% errors, no Retry-After"]
			if rate.Requests != 1 || rate.Codes["injected_fault"] != 1 || rate.Recovery == nil || !rate.Recovery.Recovered {
				t.Errorf("the error rate (the 504 is the gateway's, not the rate's): %+v %+v", rate, rate.Recovery)
			}
			if len(ph) != 2 {
				t.Errorf("sections %+v", ph)
			}
			cleanReport(t, c, 5)
		})
	}
}
