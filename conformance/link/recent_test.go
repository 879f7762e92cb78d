package link

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
	rt.d.accept(string(m[1]), rt.lag)
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

func (l *Link) command(t *testing.T, io string) {
	req := client.Request{Path: device.SendCommand.Path(), Format: device.JSON, Fields: []client.Field{
		{Key: device.FieldMAC, Value: settleMAC}, {Key: device.FieldSN, Value: settleSN},
		{Key: device.FieldType, Value: "Appliance Module"}, {Key: "io", Value: io}}}
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
