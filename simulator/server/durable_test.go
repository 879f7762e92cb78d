package server

import (
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	// simtest imports this package: its internal tests use the part
	// of simtest that does not (package core), under the same name.
	simtest "github.com/gwdmi/gwtools/simulator/simtest/core"
)

// fakeDurable records what the server syncs, and fails when told to.
type fakeDurable struct {
	mu     sync.Mutex
	synced []string
	fail   bool
}

func (d *fakeDurable) note(s string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail {
		return errors.New("disk full")
	}
	d.synced = append(d.synced, s)
	return nil
}

func (d *fakeDurable) SyncDevice(a, mac, sn string) error {
	return d.note("device " + a + "/" + mac + "/" + sn)
}
func (d *fakeDurable) SyncMessages(a, mac string) error { return d.note("messages " + a + "/" + mac) }
func (d *fakeDurable) Reset(reset func()) error {
	if err := d.note("reset"); err != nil {
		return err
	}
	reset()
	return nil
}

// TestDurable: each applied change is synced before its answer, a
// rejected one is not; when syncing fails the change is not acknowledged:
// 503 storage_failed in the request's format.
func TestDurable(t *testing.T) {
	d := &fakeDurable{}
	_, c := testServer(t, nil, Config{Durable: d}, nil)
	sn := simtest.SN('a', 5)
	c.Send(device.SendCommand, device.JSON, dimmer(c, c.Envelope(), "20")).OK(t, device.JSON)
	c.Send(device.SendCommand, device.JSON, dimmer(c, c.Envelope(), "0")).Fail(t, device.JSON, 400, device.CodeInvalidField, "dimming")
	c.Send(device.UpdateName, device.XML, append(c.Envelope(), simtest.S("sn", sn), simtest.S("name", "N"))).OK(t, device.XML)
	c.Send(device.SendMessage, device.JSON, append(c.Envelope(), simtest.S("message_type", "message"), simtest.S("message_value", "a=1"))).OK(t, device.JSON)
	c.Reset()
	dev := "device " + simtest.AccountA + "/" + simtest.MACA + "/" + sn
	want := []string{dev, dev, "messages " + simtest.AccountA + "/" + simtest.MACA, "reset"}
	if len(d.synced) != len(want) {
		t.Fatalf("synced %q, want %q", d.synced, want)
	}
	for i := range want {
		if d.synced[i] != want[i] {
			t.Errorf("synced %q, want %q", d.synced, want)
		}
	}
	d.mu.Lock()
	d.fail = true
	d.mu.Unlock()
	for _, f := range []device.Format{device.JSON, device.XML} {
		c.Send(device.SendCommand, f, dimmer(c, c.Envelope(), "21")).Fail(t, f, http.StatusServiceUnavailable, device.CodeStorageFailed, "")
	}
	if status, _, _ := c.Admin(http.MethodPost, "/_sim/reset", ""); status != http.StatusServiceUnavailable {
		t.Errorf("reset with a failing state file: %d", status)
	}
}
