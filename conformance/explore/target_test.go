package explore

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// bug is a deliberate deviation of the test target, one of the kinds
// docs/explore.md names; the fixed checks pass them all.
type bug int

const (
	faithful        bug = iota
	lostUpdate          // read-modify-write of a device without a lock
	ignoresNth          // every fifth command since the reset answers success and does nothing
	renameUndone        // a command writes back the name the device was loaded with
	sharedState         // devices of one type on one account share their state across gateways
	shortMessageLog     // the message log keeps only its last three entries
)

// testTarget implements the interface from the two texts, with the core's
// codec, domain validation and authentication (none of the explorer's
// own rules), its CONTRACT 7 reads on the same listener, and one bug.
type testTarget struct {
	bug   bug
	fleet *fleet.Fleet
	authn *auth.Authenticator

	mu       sync.Mutex
	gws      map[string]*tgGateway
	shared   map[string]*device.State // sharedState: account/type -> state
	commands int
}

type tgGateway struct {
	account string
	devs    map[string]*tgDevice
	log     []Msg
}

type tgDevice struct {
	typ        *device.Type
	name, orig string
	state      device.State
}

func startTarget(t testing.TB, b bug, f *fleet.Fleet) string {
	api, _ := startSplitTarget(t, b, f, false)
	return api
}

// startSplitTarget serves the interface on one listener and, when split,
// its CONTRACT 7 reads (no reset) on another, as a vendor's observer
// would; otherwise both on one, with a reset.
func startSplitTarget(t testing.TB, b bug, f *fleet.Fleet, split bool) (api, observer string) {
	tt := &testTarget{bug: b, fleet: f, authn: f.Authenticator()}
	tt.reset()
	mux, reads := http.NewServeMux(), http.NewServeMux()
	for _, op := range device.Operations {
		mux.HandleFunc("POST "+op.Path(), func(w http.ResponseWriter, r *http.Request) { tt.serve(w, r, op) })
	}
	if !split {
		reads = mux
		mux.HandleFunc("POST /_sim/reset", func(w http.ResponseWriter, r *http.Request) {
			tt.reset()
			io.WriteString(w, `{"status":"ok"}`)
		})
	}
	reads.HandleFunc("GET /_sim/gateways/{mac}/devices/{sn}", tt.readDevice)
	reads.HandleFunc("GET /_sim/gateways/{mac}/messages", tt.readMessages)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	if !split {
		return srv.URL, srv.URL
	}
	obs := httptest.NewServer(reads)
	t.Cleanup(obs.Close)
	return srv.URL, obs.URL
}

func (tt *testTarget) reset() {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.gws, tt.shared, tt.commands = map[string]*tgGateway{}, map[string]*device.State{}, 0
	for _, a := range tt.fleet.Accounts {
		for _, g := range a.Gateways {
			gw := &tgGateway{account: a.ID, devs: map[string]*tgDevice{}}
			for _, d := range g.Devices {
				typ, _ := device.LookupType(d.Type)
				st, err := typ.ParseState(d.State)
				if err != nil {
					panic(err)
				}
				gw.devs[d.SN] = &tgDevice{typ: typ, name: d.Name, orig: d.Name, state: st}
				if k := a.ID + "/" + d.Type; tt.bug == sharedState && tt.shared[k] == nil {
					tt.shared[k] = &st
				}
			}
			tt.gws[g.MAC] = gw
		}
	}
}

// stateOf is where a device's state lives.
func (tt *testTarget) stateOf(gw *tgGateway, d *tgDevice) *device.State {
	if tt.bug == sharedState {
		return tt.shared[gw.account+"/"+d.typ.Name]
	}
	return &d.state
}

var statusOf = map[string]int{
	device.CodeInvalidField: 400, device.CodeMissingField: 400, device.CodeUnexpectedField: 400, device.CodeMalformedBody: 400,
	device.CodeUnsupportedMediaType: 415, device.CodeUnknownAPIKey: 401, device.CodeBadSignature: 401, device.CodeStaleTimestamp: 401,
	device.CodeAccountMismatch: 403, device.CodeGatewayNotFound: 404, device.CodeDeviceNotFound: 404, device.CodeTypeMismatch: 409,
}

func (tt *testTarget) serve(w http.ResponseWriter, r *http.Request, op device.Operation) {
	format, derr := codec.FormatOf(r.Header.Get("Content-Type"))
	if derr != nil {
		format = device.JSON
	}
	fail := func(e *device.Error) {
		w.Header().Set("Content-Type", codec.ContentType(format))
		w.WriteHeader(statusOf[e.Code])
		w.Write(codec.Error(format, e))
	}
	if derr != nil {
		fail(derr)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	pairs, derr := codec.Decode(format, body)
	if derr != nil {
		fail(derr)
		return
	}
	for _, p := range pairs {
		// The texts trim only name (CONTRACT 3): " On" is not On.
		if p.Key != device.FieldName && p.Value.Text != strings.TrimSpace(p.Value.Text) {
			fail(device.Errorf(device.CodeInvalidField, p.Key, "%s has white space around it", p.Key))
			return
		}
	}
	req, derr := device.Parse(op, format, pairs)
	if derr != nil {
		fail(derr)
		return
	}
	if derr := tt.authn.Check(&req.Envelope); derr != nil {
		fail(derr)
		return
	}
	if derr := tt.apply(req); derr != nil {
		fail(derr)
		return
	}
	w.Header().Set("Content-Type", codec.ContentType(format))
	w.Write(codec.Success(format))
}

func (tt *testTarget) apply(req *device.Request) *device.Error {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	gw, ok := tt.gws[req.MAC]
	if !ok || gw.account != req.AccountID {
		return device.Errorf(device.CodeGatewayNotFound, "mac", "no gateway %s", req.MAC)
	}
	if req.Op == device.SendMessage {
		gw.log = append(gw.log, Msg{Type: req.MessageType, Value: req.MessageValue})
		if tt.bug == shortMessageLog && len(gw.log) > 3 {
			gw.log = gw.log[len(gw.log)-3:]
		}
		return nil
	}
	d, ok := gw.devs[req.SN]
	if !ok {
		return device.Errorf(device.CodeDeviceNotFound, "sn", "no device %s", req.SN)
	}
	if req.Op == device.UpdateName {
		d.name = strings.TrimSpace(req.Name)
		return nil
	}
	if req.Type != d.typ {
		return device.Errorf(device.CodeTypeMismatch, "type", "the device is a %s", d.typ.Name)
	}
	tt.commands++
	switch {
	case tt.bug == ignoresNth && tt.commands%5 == 0:
		return nil
	case tt.bug == renameUndone:
		d.name = d.orig
	case tt.bug == lostUpdate:
		// Read, let go of the lock while "talking to the device", write
		// the whole record back.
		st, name := *tt.stateOf(gw, d), d.name
		tt.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		tt.mu.Lock()
		*tt.stateOf(gw, d), d.name = d.typ.Apply(st, req.Settings...), name
		return nil
	}
	s := tt.stateOf(gw, d)
	*s = d.typ.Apply(*s, req.Settings...)
	return nil
}

func (tt *testTarget) readDevice(w http.ResponseWriter, r *http.Request) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	gw, ok := tt.gws[r.PathValue("mac")]
	if !ok || gw.devs[r.PathValue("sn")] == nil {
		http.Error(w, `{"status":"error"}`, http.StatusNotFound)
		return
	}
	d := gw.devs[r.PathValue("sn")]
	json.NewEncoder(w).Encode(map[string]any{"sn": r.PathValue("sn"), "type": d.typ.Name, "name": d.name, "state": d.typ.StateMap(*tt.stateOf(gw, d))})
}

func (tt *testTarget) readMessages(w http.ResponseWriter, r *http.Request) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	gw, ok := tt.gws[r.PathValue("mac")]
	if !ok {
		http.Error(w, `{"status":"error"}`, http.StatusNotFound)
		return
	}
	log := gw.log
	if log == nil {
		log = []Msg{}
	}
	json.NewEncoder(w).Encode(log)
}
