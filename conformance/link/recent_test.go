package link

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// recentTarget is a target whose one device takes each command lag after
// it answers (at once: lag 0), and whose observer counts its reads.
type recentTarget struct {
	d     *lateDevice
	lag   time.Duration
	reads atomic.Int64
	// refuse: the target answers each command 400, and applies it all
	// the same (a bug the effect checks are there to find).
	refuse atomic.Bool
}

func (rt *recentTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_sim/") {
		rt.reads.Add(1)
		rt.d.ServeHTTP(w, r)
		return
	}
	b, _ := io.ReadAll(r.Body)
	m := regexp.MustCompile(`"io"\s*:\s*"(\w+)"`).FindSubmatch(b)
	if m == nil {
		http.Error(w, "no io in "+string(b), http.StatusBadRequest)
		return
	}
	if strings.Contains(string(b), settleSN) {
		rt.d.accept(string(m[1]), rt.lag)
	}
	w.Header().Set("Content-Type", "application/json")
	if rt.refuse.Load() {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"status":"error","error":{"code":"INVALID_FIELD","field":"io"}}`))
		return
	}
	w.Write([]byte(`{"status":"success"}`))
}

func recentLink(t *testing.T, rt *recentTarget, cfg Config) *Link {
	srv := httptest.NewServer(rt)
	t.Cleanup(srv.Close)
	c, err := client.New(client.Config{BaseURL: srv.URL, Signer: client.FormatSigner{}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Client, cfg.Observer, cfg.Tested = c, observer.Reader{Base: srv.URL}, func() string { return settleMAC }
	if cfg.Settle == 0 {
		cfg.Settle = time.Second
	}
	return New(cfg)
}

func (l *Link) command(t *testing.T, io string) { l.commandTo(t, settleSN, io) }

// send sends a request, whatever its answer.
func (l *Link) send(t *testing.T, req client.Request) {
	t.Helper()
	if _, _, err := l.RoundTrip(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

// commandTo sends a command setting io to the device sn ("" to name no
// device).
func (l *Link) commandTo(t *testing.T, sn, io string) {
	t.Helper()
	fields := []client.Field{{Key: device.FieldMAC, Value: settleMAC}}
	if sn != "" {
		fields = append(fields, client.Field{Key: device.FieldSN, Value: sn})
	}
	fields = append(fields, client.Field{Key: device.FieldType, Value: "Appliance Module"}, client.Field{Key: "io", Value: io})
	req := client.Request{Path: device.SendCommand.Path(), Format: device.JSON, Fields: fields}
	if _, _, err := l.RoundTrip(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

// A device read with nothing sent since is taken as it was, once the
// target has shown it applies changes at once; never before, never after
// a request (accepted or not), never on a target seen to apply late, never when other
// processes send to it.
func TestUnchangedOnlyWhileNothingIsSentToATargetThatAppliesAtOnce(t *testing.T) {
	ctx := context.Background()
	rt := &recentTarget{d: &lateDevice{io: "Off"}}
	l := recentLink(t, rt, Config{})
	if _, err := l.ReadDeviceNow(ctx, settleMAC, settleSN); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Unchanged(settleMAC, settleSN); ok {
		t.Error("a read was reused before the target was seen to apply a change")
	}
	l.command(t, "On")
	if d, err := l.ReadDevice(ctx, settleMAC, settleSN); err != nil || d.State["io"] != "On" {
		t.Fatalf("read after the command: %v %v", d.State, err)
	}
	d, ok := l.Unchanged(settleMAC, settleSN)
	if !ok || d.State["io"] != "On" {
		t.Errorf("with nothing sent since, Unchanged = %v %v, want the last read (io On)", d.State, ok)
	}
	// A refused request leaves nothing to await; the target applies it
	// all the same.
	rt.refuse.Store(true)
	l.command(t, "Off")
	if _, ok := l.Unchanged(settleMAC, settleSN); ok {
		t.Error("a read was reused after a request was sent")
	}
	if d, err := l.ReadDeviceNow(ctx, settleMAC, settleSN); err != nil || d.State["io"] != "Off" {
		t.Fatalf("the refused command applied: %v %v", d.State, err)
	}
	reads := rt.reads.Load()
	if d, ok := l.Unchanged(settleMAC, settleSN); !ok || d.State["io"] != "Off" || rt.reads.Load() != reads {
		t.Errorf("read again with nothing sent since: Unchanged = %v %v, want io Off without a read", d.State, ok)
	}

	late := &recentTarget{d: &lateDevice{io: "Off"}, lag: 100 * time.Millisecond}
	ll := recentLink(t, late, Config{})
	ll.command(t, "On")
	if _, err := ll.ReadDevice(ctx, settleMAC, settleSN); err != nil {
		t.Fatal(err)
	}
	if _, ok := ll.Unchanged(settleMAC, settleSN); ok {
		t.Error("a read was reused on a target that applies changes late")
	}

	shared := recentLink(t, &recentTarget{d: &lateDevice{io: "Off"}}, Config{Shared: true})
	shared.command(t, "On")
	if _, err := shared.ReadDevice(ctx, settleMAC, settleSN); err != nil {
		t.Fatal(err)
	}
	if _, ok := shared.Unchanged(settleMAC, settleSN); ok {
		t.Error("a read was reused while other processes send to the target")
	}
}

// For a check run ahead of its place (a recording trial, whose failure is
// confirmed alone), a device read stands for a later one while nothing
// about that device, and nothing that names no device, was sent or in
// flight since: requests to other devices do not matter. A live check
// reads again.
func TestUnchangedHereWhileNothingAboutTheDeviceIsSent(t *testing.T) {
	ctx := context.Background()
	ahead := trial.With(ctx, trial.Recording())
	other := "0123456789abcdef0123456789abcd02"
	rt := &recentTarget{d: &lateDevice{io: "Off"}}
	l := recentLink(t, rt, Config{})
	l.command(t, "On")
	if d, err := l.ReadDevice(ctx, settleMAC, settleSN); err != nil || d.State["io"] != "On" {
		t.Fatalf("read after the command: %v %v", d.State, err)
	}
	l.commandTo(t, other, "Off")
	if _, ok := l.Unchanged(settleMAC, settleSN); ok {
		t.Error("Unchanged reused a read after a request to another device")
	}
	d, ok := l.UnchangedHere(settleMAC, settleSN)
	if !ok || d.State["io"] != "On" {
		t.Fatalf("after a request to another device only, UnchangedHere = %v %v, want the last read (io On)", d.State, ok)
	}
	reads := rt.reads.Load()
	if d, err := l.ReadDevice(ahead, settleMAC, settleSN); err != nil || d.State["io"] != "On" || rt.reads.Load() != reads {
		t.Errorf("a check run ahead read the device again (%d reads, %v %v), want the last read", rt.reads.Load()-reads, d.State, err)
	}
	if _, err := l.ReadDevice(ctx, settleMAC, settleSN); err != nil || rt.reads.Load() != reads+1 {
		t.Errorf("a live check did not read the device again (%d reads, %v)", rt.reads.Load()-reads, err)
	}

	// A request that names no device changes none; one that names it in
	// another letter case may change it; a body the link cannot read may
	// name any.
	l.commandTo(t, "", "On")
	if _, ok := l.UnchangedHere(settleMAC, settleSN); !ok {
		t.Fatal("no reuse after a request that names no device")
	}
	l.send(t, client.Request{Path: device.SendCommand.Path(), Format: device.JSON, Fields: []client.Field{
		{Key: device.FieldMAC, Value: settleMAC}, {Key: " SN", Value: strings.ToUpper(settleSN)}, {Key: "io", Value: "On"}}})
	if _, ok := l.UnchangedHere(settleMAC, settleSN); ok {
		t.Error("a read was reused after a request that names the device under the key \" SN\"")
	}
	if _, err := l.ReadDeviceNow(ctx, settleMAC, settleSN); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.UnchangedHere(settleMAC, settleSN); !ok {
		t.Fatal("no reuse after a fresh read")
	}
	l.send(t, client.Request{Path: device.SendCommand.Path(), Format: device.JSON, RawBody: []byte(`{"io":"On"`)})
	if _, ok := l.UnchangedHere(settleMAC, settleSN); ok {
		t.Error("a read was reused after a request whose body is not its fields")
	}

	// Never on a target seen to apply changes late.
	late := &recentTarget{d: &lateDevice{io: "Off"}, lag: 100 * time.Millisecond}
	ll := recentLink(t, late, Config{})
	ll.command(t, "On")
	if _, err := ll.ReadDevice(ctx, settleMAC, settleSN); err != nil {
		t.Fatal(err)
	}
	ll.commandTo(t, other, "Off")
	if _, ok := ll.UnchangedHere(settleMAC, settleSN); ok {
		t.Error("a read was reused on a target that applies changes late")
	}
}

// What may have changed a device, for a read of it that stands for a
// later one in a check run ahead: a request that names it answered with
// anything but a refusal (a success, a 5xx, no answer) after the read
// began, even one in flight when it began; a refusal does not count, nor
// a request until it is answered.
func TestRecentCountsWhatMayHaveChangedADevice(t *testing.T) {
	key := catalog.HexOnly(settleSN)
	place := devPlace(settleMAC, settleSN)
	cmd := New(Config{}).sentOf(client.Request{Path: device.SendCommand.Path(), Fields: []client.Field{{Key: device.FieldSN, Value: settleSN}}}, false)
	refusal := &client.Response{Status: 400, StatusField: "error"}
	for _, tc := range []struct {
		name   string
		resp   *client.Response
		err    error
		stands bool
	}{
		{"a refusal", refusal, nil, true},
		{"a success", &client.Response{Status: 200, StatusField: "success"}, nil, false},
		{"a 503", &client.Response{Status: 503, StatusField: "error"}, nil, false},
		{"no answer", nil, errors.New("timeout"), false},
	} {
		// The request is in flight when the read begins and answered
		// before it ends.
		var r recent
		done := r.sending(cmd)
		m := r.mark(key)
		done(tc.resp, tc.err)
		r.keep(place, "read", m)
		if _, ok := r.lastHere(place); ok != tc.stands {
			t.Errorf("a read while %s was in flight: stands = %v, want %v", tc.name, ok, tc.stands)
		}
		// Answered after the read ended.
		r = recent{}
		m = r.mark(key)
		r.keep(place, "read", m)
		done = r.sending(cmd)
		if _, ok := r.lastHere(place); !ok {
			t.Errorf("a read does not stand while a request that names the device is in flight, unanswered")
		}
		done(tc.resp, tc.err)
		if _, ok := r.lastHere(place); ok != tc.stands {
			t.Errorf("a read before %s: stands = %v, want %v", tc.name, ok, tc.stands)
		}
		// The rule of a check in its place counts every request.
		if _, ok := r.last(place); ok {
			t.Errorf("after %s, a read stands for a check in its place", tc.name)
		}
	}
}
