package simulator_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/simtest"
	"github.com/gwdmi/gwtools/simulator/store"
)

func adminErr(t *testing.T, c *simtest.Client, method, path, body string, status int, code string) {
	t.Helper()
	got, h, b := c.Admin(method, path, body)
	var e struct {
		Status string `json:"status"`
		Error  struct{ Code, Field, Message string }
	}
	if err := json.Unmarshal(b, &e); err != nil || got != status || e.Status != "error" || e.Error.Code != code ||
		!strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Errorf("%s %s: %d %s, want %d %s", method, path, got, b, status, code)
	}
}

func TestAdminHealthStateDevice(t *testing.T) {
	t.Parallel()
	f := simtest.Fleet()
	_, c := start(t, simulator.Options{Fleet: f})
	var health map[string]string
	c.AdminJSON(http.MethodGet, "/_sim/health", "", &health)
	if !reflect.DeepEqual(health, map[string]string{"status": "ok"}) {
		t.Errorf("health: %v", health)
	}

	// The state lists every account, gateway and device of the fleet as
	// loaded, in fleet order, with no messages.
	state := c.State()
	if len(state) != len(f.Accounts) {
		t.Fatalf("state has %d accounts, want %d", len(state), len(f.Accounts))
	}
	for i, a := range f.Accounts {
		if state[i].ID != a.ID || len(state[i].Gateways) != len(a.Gateways) {
			t.Fatalf("account %d: %s", i, dump(state[i]))
		}
		for j, g := range a.Gateways {
			gv := state[i].Gateways[j]
			if gv.MAC != g.MAC || len(gv.Devices) != len(g.Devices) || len(gv.Messages) != 0 || gv.MessagesTotal != 0 {
				t.Fatalf("gateway %s: %s", g.MAC, dump(gv))
			}
			for k, d := range g.Devices {
				typ, _ := device.LookupType(d.Type)
				st, _ := typ.ParseState(d.State)
				want := store.DeviceView{SN: d.SN, Type: d.Type, Name: d.Name, State: roundTrip(t, typ.StateMap(st))}
				if !reflect.DeepEqual(gv.Devices[k], want) {
					t.Errorf("device %s: %s, want %s", d.SN, dump(gv.Devices[k]), dump(want))
				}
				if got := c.Device(g.MAC, d.SN); !reflect.DeepEqual(got, want) {
					t.Errorf("GET device %s: %s, want %s", d.SN, dump(got), dump(want))
				}
			}
		}
	}
	if got := c.Device(simtest.MACA2, simtest.SN('c', 0)).State["dimming"]; got != 10.0 {
		t.Errorf("state from the fleet file: dimming %v, want 10", got)
	}
	if got := c.Device(strings.ToUpper(simtest.MACA), strings.ToUpper(snOf(dimmer))); got.SN != snOf(dimmer) {
		t.Errorf("upper-case path: %s", dump(got))
	}
	adminErr(t, c, "GET", "/_sim/gateways/"+simtest.MACA+"/devices/"+simtest.SN('f', 0), "", 404, device.CodeDeviceNotFound)
	adminErr(t, c, "GET", "/_sim/gateways/"+simtest.MACA+"/devices/xyz", "", 404, device.CodeDeviceNotFound)
	adminErr(t, c, "GET", "/_sim/gateways/ffffffffffff/devices/"+snOf(dimmer), "", 404, device.CodeDeviceNotFound)
	adminErr(t, c, "GET", "/_sim/gateways/ffffffffffff/messages", "", 404, device.CodeGatewayNotFound)
	adminErr(t, c, "GET", "/_sim/nothing", "", 404, device.CodeNotFound)
	adminErr(t, c, "GET", "/_sim/reset", "", 404, device.CodeNotFound)
	adminErr(t, c, "GET", "/_sim/state?limit=x", "", 400, device.CodeInvalidField)
}

// roundTrip is v as it looks after JSON encoding and decoding.
func roundTrip(t *testing.T, v map[string]any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

func message(c *simtest.Client, value string) []simtest.F {
	return append(c.Envelope(), S("message_type", "message"), S("message_value", value))
}

func TestAdminMessagesBounded(t *testing.T) {
	t.Parallel()
	_, c := start(t, simulator.Options{MessageLimit: 3})
	for i := 1; i <= 5; i++ {
		c.Send(device.SendMessage, formats[i%2], message(c, fmt.Sprintf("n=%d", i))).OK(t, formats[i%2])
	}
	var values []string
	for _, m := range c.Messages(simtest.MACA) {
		values = append(values, m.Type+":"+m.Value)
	}
	if got := strings.Join(values, " "); got != "message:n=3 message:n=4 message:n=5" {
		t.Errorf("messages: %s, want the last three oldest first", got)
	}
	_, h, _ := c.Admin("GET", "/_sim/gateways/"+simtest.MACA+"/messages", "")
	if h.Get("X-Total-Count") != "5" {
		t.Errorf("X-Total-Count %q, want 5", h.Get("X-Total-Count"))
	}
	// ?limit=N: the newest N, oldest first; 0 none; more than there are: all.
	for limit, want := range map[string]string{"1": "n=5", "2": "n=4 n=5", "0": "", "9": "n=3 n=4 n=5"} {
		var got []struct {
			Value string `json:"message_value"`
		}
		path := "/_sim/gateways/" + simtest.MACA + "/messages?limit=" + limit
		c.AdminJSON("GET", path, "", &got)
		_, h, _ := c.Admin("GET", path, "")
		var vs []string
		for _, m := range got {
			vs = append(vs, m.Value)
		}
		if strings.Join(vs, " ") != want || h.Get("X-Total-Count") != "5" {
			t.Errorf("limit=%s: %v (X-Total-Count %q), want %q and 5", limit, vs, h.Get("X-Total-Count"), want)
		}
	}
	adminErr(t, c, "GET", "/_sim/gateways/"+simtest.MACA+"/messages?limit=-1", "", 400, device.CodeInvalidField)
	if g := gatewayOf(t, c.State(), simtest.MACA); g.MessagesTotal != 5 || len(g.Messages) != 3 {
		t.Errorf("state: %s", dump(g))
	}
	if n := len(c.Messages(simtest.MACA2)); n != 0 {
		t.Errorf("%d messages on the other gateway", n)
	}
}

func TestAdminJournal(t *testing.T) {
	t.Parallel()
	_, c := start(t, simulator.Options{JournalSize: 4})
	sn := snOf(dimmer)
	c.Send(device.SendCommand, device.JSON, c.Command(sn, dimmer, S("dimming", "5")))                         // 1: 200
	c.Send(device.SendCommand, device.XML, c.Command(sn, dimmer, S("dimming", "0")))                          // 2: 400
	c.Send(device.SendMessage, device.XML, message(c, "a=1"))                                                 // 3: 200
	c.Send(device.UpdateName, device.JSON, append(c.Envelope(), S("sn", simtest.SN('f', 1)), S("name", "x"))) // 4: 404
	c.Do("GET", device.SendCommand.Path(), "", nil)                                                           // 5: 405
	c.Post("/nowhere", ctXML, []byte("<xml/>"))                                                               // 6: 404
	var all []server.Entry
	c.AdminJSON("GET", "/_sim/journal", "", &all)
	type row struct {
		Path, Format string
		Status       int
		Code, Field  string
	}
	var got []row
	for _, e := range all {
		if e.Time.IsZero() || e.Method == "" {
			t.Errorf("entry without time or method: %+v", e)
		}
		got = append(got, row{e.Path, e.Format, e.Status, e.Code, e.Field})
	}
	want := []row{
		{device.SendMessage.Path(), "xml", 200, "", ""},
		{device.UpdateName.Path(), "json", 404, device.CodeDeviceNotFound, "sn"},
		{device.SendCommand.Path(), "", 405, device.CodeMethodNotAllowed, ""},
		{"/nowhere", "xml", 404, device.CodeNotFound, ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("journal (bounded to 4, oldest first):\n%+v\nwant\n%+v", got, want)
	}
	var last2 []server.Entry
	c.AdminJSON("GET", "/_sim/journal?limit=2", "", &last2)
	if len(last2) != 2 || last2[0].Status != 405 || last2[1].Path != "/nowhere" {
		t.Errorf("limit=2: %s", dump(last2))
	}
	_, h, _ := c.Admin("GET", "/_sim/journal?limit=1", "")
	if h.Get("X-Total-Count") != "6" {
		t.Errorf("X-Total-Count %q, want 6", h.Get("X-Total-Count"))
	}
	adminErr(t, c, "GET", "/_sim/journal?limit=-1", "", 400, device.CodeInvalidField)
	adminErr(t, c, "GET", "/_sim/journal?limit=ten", "", 400, device.CodeInvalidField)
}

func TestAdminReset(t *testing.T) {
	t.Parallel()
	_, c := start(t, simulator.Options{})
	initial := c.State()
	c.Send(device.SendCommand, device.JSON, c.Command(snOf(thermostat), thermostat, S("mode", "Heat"), S("heating point", "22.5"))).OK(t, device.JSON)
	c.Send(device.UpdateName, device.XML, append(c.Envelope(), S("sn", snOf(relay)), S("name", "Renamed"))).OK(t, device.XML)
	c.Send(device.SendMessage, device.JSON, message(c, "x=1")).OK(t, device.JSON)
	if reflect.DeepEqual(c.State(), initial) {
		t.Fatal("the requests changed nothing")
	}
	var answer map[string]string
	c.AdminJSON(http.MethodPost, "/_sim/reset", "", &answer)
	if answer["status"] != "ok" {
		t.Errorf("reset answered %v", answer)
	}
	if got := c.State(); !reflect.DeepEqual(got, initial) {
		t.Errorf("after reset:\n%s\nwant the fleet as loaded:\n%s", dump(got), dump(initial))
	}
	// The state is usable after a reset.
	c.Send(device.SendCommand, device.XML, c.Command(snOf(dimmer), dimmer, S("dimming", "77"))).OK(t, device.XML)
	if got := c.Device(simtest.MACA, snOf(dimmer)).State["dimming"]; got != 77.0 {
		t.Errorf("dimming after reset and command: %v", got)
	}
}

func TestAdminFaults(t *testing.T) {
	t.Parallel()
	_, c := start(t, simulator.Options{})
	dim := func(v string) []simtest.F { return c.Command(snOf(dimmer), dimmer, S("dimming", v)) }
	var f server.Faults
	c.AdminJSON("GET", "/_sim/faults", "", &f)
	if f.Latency.Duration != 0 || f.ErrorRate != 0 || len(f.OfflineGateways) != 0 {
		t.Errorf("faults at start: %+v", f)
	}

	t.Run("latency", func(t *testing.T) {
		c.AdminJSON("PUT", "/_sim/faults", `{"latency":"300ms"}`, &f)
		if f.Latency.Duration != 300*time.Millisecond {
			t.Errorf("PUT answered %+v", f)
		}
		for _, format := range formats {
			began := time.Now()
			expect(t, c, format, sendOp(c, device.SendCommand, format, dim("33")), ok(setState(dimmer, "dimming", 33.0)))
			if d := time.Since(began); d < 300*time.Millisecond {
				t.Errorf("answered after %s, want at least 300ms", d)
			}
		}
		c.AdminJSON("DELETE", "/_sim/faults", "", &f)
	})
	t.Run("error rate 1", func(t *testing.T) {
		c.AdminJSON("PUT", "/_sim/faults", `{"error_rate":1.0}`, nil)
		for _, format := range formats {
			expect(t, c, format, sendOp(c, device.SendCommand, format, dim("34")), rejected(503, device.CodeInjectedFault, ""))
			// Bad input is still a 400, never a 5xx.
			expect(t, c, format, sendOp(c, device.SendCommand, format, dim("0")), bad(device.CodeInvalidField, "dimming"))
		}
		c.AdminJSON("PUT", "/_sim/faults", `{"error_rate":0}`, nil)
		expect(t, c, device.JSON, sendOp(c, device.SendCommand, device.JSON, dim("35")), ok(setState(dimmer, "dimming", 35.0)))
	})
	t.Run("offline gateway", func(t *testing.T) {
		c.AdminJSON("PUT", "/_sim/faults", `{"offline_gateways":["`+strings.ToUpper(simtest.MACA)+`"]}`, &f)
		if !reflect.DeepEqual(f.OfflineGateways, []string{simtest.MACA}) {
			t.Errorf("offline gateways stored as %v", f.OfflineGateways)
		}
		for _, format := range formats {
			expect(t, c, format, sendOp(c, device.SendCommand, format, dim("36")), rejected(504, device.CodeGatewayOffline, device.FieldMAC))
			expect(t, c, format, sendOp(c, device.SendMessage, format, message(c, "a=1")), rejected(504, device.CodeGatewayOffline, device.FieldMAC))
		}
		// Another gateway still answers.
		other := *c
		other.MAC = simtest.MACA2
		expect(t, c, device.JSON, sendOp(&other, device.SendMessage, device.JSON, message(&other, "b=2")),
			ok(&change{mac: simtest.MACA2, message: &store.Message{Type: "message", Value: "b=2"}}))
		c.AdminJSON("DELETE", "/_sim/faults", "", nil)
		expect(t, c, device.XML, sendOp(c, device.SendCommand, device.XML, dim("37")), ok(setState(dimmer, "dimming", 37.0)))
	})
	t.Run("bad faults", func(t *testing.T) {
		c.AdminJSON("PUT", "/_sim/faults", `{"latency":"10ms","error_rate":0.5}`, nil)
		var before server.Faults
		c.AdminJSON("GET", "/_sim/faults", "", &before)
		for body, code := range map[string]string{
			`{`:                                     device.CodeMalformedBody,
			`not json`:                              device.CodeMalformedBody,
			`{"latency":"soon"}`:                    device.CodeMalformedBody,
			`{"latncy":"1s"}`:                       device.CodeMalformedBody,
			`{"error_rate":"half"}`:                 device.CodeMalformedBody,
			`{"error_rate":1.5}`:                    device.CodeInvalidField,
			`{"error_rate":-0.1}`:                   device.CodeInvalidField,
			`{"latency":"-1s"}`:                     device.CodeInvalidField,
			`{"latency":"2h"}`:                      device.CodeInvalidField,
			`{"offline_gateways":["abc"]}`:          device.CodeInvalidField,
			`{"offline_gateways":["zzzzzzzzzzzz"]}`: device.CodeInvalidField,
			`{"offline_gateways":"a4c138f0e2b1"}`:   device.CodeMalformedBody,
		} {
			adminErr(t, c, "PUT", "/_sim/faults", body, 400, code)
		}
		var after server.Faults
		c.AdminJSON("GET", "/_sim/faults", "", &after)
		if !reflect.DeepEqual(after, before) {
			t.Errorf("a refused PUT changed the faults: %+v, was %+v", after, before)
		}
		c.AdminJSON("DELETE", "/_sim/faults", "", nil)
	})
}

func TestAdminToken(t *testing.T) {
	t.Parallel()
	// Each set of wrong tokens goes to a simulator of its own: a client
	// sending more than ten is held back (429, TestBearerGuessingIsLimited
	// in simulator/server).
	fresh := func() *simtest.Client {
		_, c := start(t, simulator.Options{AdminToken: "s3cret"})
		return c
	}
	c := fresh()
	calls := []struct{ method, path, body string }{
		{"GET", "/_sim/state", ""},
		{"GET", "/_sim/dashboard/data", ""},
		{"GET", "/_sim/gateways/" + simtest.MACA + "/devices/" + snOf(dimmer), ""},
		{"GET", "/_sim/gateways/" + simtest.MACA + "/messages", ""},
		{"GET", "/_sim/journal", ""},
		{"GET", "/_sim/faults", ""},
		{"PUT", "/_sim/faults", `{}`},
		{"DELETE", "/_sim/faults", ""},
		{"POST", "/_sim/reset", ""},
	}
	for _, auth := range []string{"", "wrong", "S3CRET", "s3cret2"} {
		c = fresh()
		c.AdminToken = auth
		for _, call := range calls {
			adminErr(t, c, call.method, call.path, call.body, 401, device.CodeUnauthorized)
		}
	}
	// The event stream (which, open, would stream forever) too.
	for _, auth := range []string{"", "wrong"} {
		c.AdminToken = auth
		adminErr(t, c, "GET", "/_sim/events", "", 401, device.CodeUnauthorized)
	}
	c.AdminToken = ""
	// The health check and the dashboard's page (which holds no data and
	// offers the sign-in) stay open.
	for _, open := range []string{"/_sim/health", "/_sim/", "/_sim/static/dashboard.js", "/_sim/session"} {
		if status, _, _ := c.Admin("GET", open, ""); status != 200 {
			t.Errorf("GET %s without the token: %d, want 200", open, status)
		}
	}
	c = fresh()
	for _, header := range []string{"s3cret", "Basic s3cret", "Bearer", "bearer s3cret"} {
		req, _ := http.NewRequest("GET", c.Base+"/_sim/state", nil)
		req.Header.Set("Authorization", header)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 401 {
			t.Errorf("Authorization %q: %d, want 401", header, res.StatusCode)
		}
	}
	c.AdminToken = "s3cret"
	for _, call := range calls {
		if status, _, b := c.Admin(call.method, call.path, call.body); status != 200 {
			t.Errorf("%s %s with the token: %d %s", call.method, call.path, status, b)
		}
	}
	// The interface itself needs no admin token.
	c.AdminToken = ""
	c.Send(device.SendCommand, device.JSON, c.Command(snOf(dimmer), dimmer, S("dimming", "9"))).OK(t, device.JSON)
}

func TestDashboard(t *testing.T) {
	t.Parallel()
	_, c := start(t, simulator.Options{})
	c.Send(device.UpdateName, device.JSON, append(c.Envelope(), S("sn", snOf(relay)), S("name", "Tom & Jerry's <Door>"))).OK(t, device.JSON)
	c.Send(device.SendMessage, device.XML, message(c, "volume=11")).OK(t, device.XML)
	status, h, b := c.Admin("GET", "/_sim/", "")
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(string(b), "/_sim/static/dashboard.js") {
		t.Fatalf("dashboard: %d %s %s", status, h.Get("Content-Type"), b)
	}
	for _, asset := range []string{"/_sim/static/dashboard.js", "/_sim/static/dashboard.css"} {
		if status, _, b := c.Admin("GET", asset, ""); status != 200 || len(b) == 0 {
			t.Errorf("%s: %d", asset, status)
		}
	}
	var data server.DashboardData
	c.AdminJSON("GET", "/_sim/dashboard/data", "", &data)
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(data)
	raw := buf.String()
	for _, want := range []string{simtest.MACA, snOf(dimmer), dimmer + " a", "Tom \u0026 Jerry's \u003cDoor\u003e",
		"volume=11", device.UpdateName.Path()} {
		if !strings.Contains(raw, want) {
			t.Errorf("dashboard data lacks %q", want)
		}
	}
	adminErr(t, c, "GET", "/_sim/dashboard/data?page=x", "", 400, device.CodeInvalidField)
}
