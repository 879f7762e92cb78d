package link

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// lateDevice is an observer whose one device takes each accepted change
// lag after it was answered, in the order they were answered (a target
// that applies changes late, as cmd/gwconform's lagging does).
type lateDevice struct {
	mu      sync.Mutex
	io      string
	pending []lateChange
}

type lateChange struct {
	at time.Time
	io string
}

func (d *lateDevice) accept(io string, lag time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending = append(d.pending, lateChange{time.Now().Add(lag), io})
}

func (d *lateDevice) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	for len(d.pending) > 0 && !time.Now().Before(d.pending[0].at) {
		d.io, d.pending = d.pending[0].io, d.pending[1:]
	}
	io := d.io
	d.mu.Unlock()
	json.NewEncoder(w).Encode(map[string]any{"sn": settleSN, "type": "Appliance Module", "name": "Coffee Maker", "state": map[string]any{"io": io}})
}

const (
	settleMAC = "a4c138f0e2b1"
	settleSN  = "0123456789abcdef0123456789abcd01"
)

// settleLink is a Link that tracks what it sends to lateDevice d.
func settleLink(t *testing.T, d *lateDevice) *Link {
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return New(Config{Observer: observer.Reader{Base: srv.URL}, Settle: 2 * time.Second, Tested: func() string { return settleMAC }})
}

// acceptedCommand is an accepted command setting io, as Track sees it.
func (l *Link) acceptedCommand(d *lateDevice, io string, lag time.Duration) {
	d.accept(io, lag)
	l.Track(client.Request{Path: device.SendCommand.Path(), Fields: []client.Field{
		{Key: device.FieldMAC, Value: settleMAC}, {Key: device.FieldSN, Value: settleSN},
		{Key: device.FieldType, Value: "Appliance Module"}, {Key: "io", Value: io}}},
		&client.Response{Status: 200, StatusField: "success"})
}

// TestVariedChangesAreTrustedOnceQuiet: a device that takes each change
// 300 ms late, in order. After one change, the read returns as soon as the
// device shows it. After On, Off, on (varied), the device shows On (the
// last value, letter case folded) 300 ms after the first answer, while
// Off and on have still to land: the read must not return then, but once
// the device has been quiet for twice the lag seen, showing the last one.
func TestVariedChangesAreTrustedOnceQuiet(t *testing.T) {
	const lag = 300 * time.Millisecond
	d := &lateDevice{io: "Off"}
	l := settleLink(t, d)
	ctx := context.Background()

	start := time.Now()
	l.acceptedCommand(d, "On", lag)
	got, err := l.awaitDevice(ctx, settleMAC, settleSN)
	if err != nil || got.State["io"] != "On" {
		t.Fatalf("one change: %v %v, want On", got.State, err)
	}
	if took := time.Since(start); took < lag || took > lag+250*time.Millisecond {
		t.Errorf("one change: read after %s, want soon after %s", took, lag)
	}

	l.acceptedCommand(d, "On", lag)
	time.Sleep(10 * time.Millisecond)
	l.acceptedCommand(d, "Off", lag)
	time.Sleep(10 * time.Millisecond)
	last := time.Now()
	l.acceptedCommand(d, "on", lag)
	got, err = l.awaitDevice(ctx, settleMAC, settleSN)
	if err != nil {
		t.Fatal(err)
	}
	// The device now holds its last value and takes nothing more.
	d.mu.Lock()
	left := len(d.pending)
	d.mu.Unlock()
	if left > 0 || time.Since(last) < lag {
		t.Errorf("varied changes: the read returned %v after %s, with %d change(s) still to land", got.State, time.Since(last), left)
	}
	if io, _ := got.State["io"].(string); !strings.EqualFold(io, "on") {
		t.Errorf("varied changes: %v, want on", got.State)
	}
}

// TestAWaitBesideAChainIsNoLag: a read that waits for a change while
// another change to the same device is accepted (a chain of checks about
// the device going on beside the check that reads it) measures that chain,
// not how late the target applies a change, and must not make every later
// varied wait longer. A wait with nothing accepted beside it is a sample.
func TestAWaitBesideAChainIsNoLag(t *testing.T) {
	const lag = 400 * time.Millisecond
	for _, beside := range []bool{true, false} {
		d := &lateDevice{io: "Off"}
		l := settleLink(t, d)
		l.acceptedCommand(d, "On", lag)
		done := make(chan error, 1)
		go func() {
			_, err := l.awaitDevice(context.Background(), settleMAC, settleSN)
			done <- err
		}()
		if beside {
			time.Sleep(lag / 4)
			l.acceptedCommand(d, "On", 0)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		l.settle.mu.Lock()
		sampled, got := l.settle.sampled, l.settle.lag
		l.settle.mu.Unlock()
		switch {
		case beside && got != 0:
			t.Errorf("a wait beside another accepted change was taken for a lag of %s", got)
		case !beside && (!sampled || got < lag):
			t.Errorf("a wait with nothing beside it: lag %s (sampled %v), want at least %s", got, sampled, lag)
		}
	}
}
