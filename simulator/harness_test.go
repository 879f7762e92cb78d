package simulator_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
	"github.com/gwdmi/gwtools/simulator/store"
)

var formats = []device.Format{device.JSON, device.XML}

// start runs a simulator of the test fleet (unless o names another) on a
// free loopback port and returns a client of account A.
func start(t *testing.T, o simulator.Options) (*simulator.Simulator, *simtest.Client) {
	t.Helper()
	s := simtest.Start(t, o)
	return s.Simulator, s.Client
}

// snOf is the device of a type on gateway MACA of the test fleet.
func snOf(typeName string) string {
	t, _ := device.LookupType(typeName)
	return simtest.SN('a', int(t.ID))
}

// change is what a successful request does to the state.
type change struct {
	mac, sn string
	// state holds the fields set, canonical: string or float64.
	state   map[string]any
	name    *string
	message *store.Message
}

// outcome is what a request must answer and do.
type outcome struct {
	status      int
	code, field string
	change      *change
}

func ok(ch *change) outcome { return outcome{status: http.StatusOK, change: ch} }

func rejected(status int, code, field string) outcome {
	return outcome{status: status, code: code, field: field}
}

func bad(code, field string) outcome { return rejected(http.StatusBadRequest, code, field) }

func setState(typeName string, kv ...any) *change {
	ch := &change{mac: simtest.MACA, sn: snOf(typeName), state: map[string]any{}}
	for i := 0; i < len(kv); i += 2 {
		ch.state[kv[i].(string)] = kv[i+1]
	}
	return ch
}

// expect sends one request and checks the answer (status, error code and
// field, in the format wantFormat) and that the state, read back through
// the admin API, changed exactly as o.change says, or not at all.
func expect(t *testing.T, c *simtest.Client, wantFormat device.Format, send func() *simtest.Response, o outcome) {
	t.Helper()
	before := c.State()
	sent := time.Now().UTC()
	r := send()
	done := time.Now().UTC()
	if o.status == http.StatusOK {
		r.OK(t, wantFormat)
	} else {
		r.Fail(t, wantFormat, o.status, o.code, o.field)
	}
	after := c.State()
	want := before
	var mac, sn string
	if o.status == http.StatusOK && o.change != nil {
		ch := o.change
		mac, sn = ch.mac, ch.sn
		gv := gatewayOf(t, want, mac)
		if ch.message != nil {
			m := *ch.message
			if got := gatewayOf(t, after, mac).Messages; len(got) > 0 {
				m.Time = got[len(got)-1].Time
			}
			if m.Time.Before(sent.Truncate(time.Second)) || m.Time.After(done.Add(time.Second)) {
				t.Errorf("message time %s is not the time of the request (%s)", m.Time, sent)
			}
			gv.Messages = append(gv.Messages, m)
			gv.MessagesTotal++
		}
		if sn != "" {
			dv := deviceOf(t, gv, sn)
			for k, v := range ch.state {
				dv.State[k] = v
			}
			if ch.name != nil {
				dv.Name = *ch.name
			}
		}
	}
	if !reflect.DeepEqual(after, want) {
		t.Errorf("state after the request:\n%s\nwant:\n%s", dump(after), dump(want))
	}
	// The per-device and per-gateway admin calls say the same, for the
	// gateway and device the request named (when the fleet has them).
	if mac == "" {
		mac, sn = simtest.MACA, ""
		if m := sentMAC.FindSubmatch(r.Sent); m != nil && hasGateway(want, strings.ToLower(string(m[1])+string(m[2]))) {
			mac = strings.ToLower(string(m[1]) + string(m[2]))
		}
		if m := sentSN.FindSubmatch(r.Sent); m != nil {
			sn = strings.ToLower(string(m[1]) + string(m[2]))
		}
	}
	gv := gatewayOf(t, want, mac)
	if got := c.Messages(mac); !reflect.DeepEqual(got, gv.Messages) && !(len(got) == 0 && len(gv.Messages) == 0) {
		t.Errorf("GET /_sim/gateways/%s/messages = %s, want %s", mac, dump(got), dump(gv.Messages))
	}
	for _, w := range gv.Devices {
		if w.SN == sn {
			if got := c.Device(mac, w.SN); !reflect.DeepEqual(got, w) {
				t.Errorf("GET /_sim/gateways/%s/devices/%s = %s, want %s", mac, w.SN, dump(got), dump(w))
			}
		}
	}
}

// sentMAC and sentSN find the gateway and device a request body names.
var (
	sentMAC = regexp.MustCompile(`"mac"\s*:\s*"([0-9A-Fa-f]{12})"|<mac>([0-9A-Fa-f]{12})</mac>`)
	sentSN  = regexp.MustCompile(`"(?:sn|device_id)"\s*:\s*"([0-9A-Fa-f]{32})"|<(?:sn|device_id)>([0-9A-Fa-f]{32})</`)
)

func hasGateway(s []store.AccountView, mac string) bool {
	for _, a := range s {
		for _, g := range a.Gateways {
			if g.MAC == mac {
				return true
			}
		}
	}
	return false
}

func gatewayOf(t *testing.T, s []store.AccountView, mac string) *store.GatewayView {
	t.Helper()
	for i := range s {
		for j := range s[i].Gateways {
			if s[i].Gateways[j].MAC == mac {
				return &s[i].Gateways[j]
			}
		}
	}
	t.Fatalf("no gateway %s in the state", mac)
	return nil
}

func deviceOf(t *testing.T, g *store.GatewayView, sn string) *store.DeviceView {
	t.Helper()
	for i := range g.Devices {
		if g.Devices[i].SN == sn {
			return &g.Devices[i]
		}
	}
	t.Fatalf("no device %s on gateway %s", sn, g.MAC)
	return nil
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// sendOp is a send func for expect.
func sendOp(c *simtest.Client, op device.Operation, format device.Format, fields []simtest.F) func() *simtest.Response {
	return func() *simtest.Response { return c.Send(op, format, fields) }
}
