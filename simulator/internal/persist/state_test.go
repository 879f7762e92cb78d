package persist

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/server"
	// simtest imports this package (through the simulator): an internal
	// test uses the part of simtest that does not (package core).
	simtest "github.com/gwdmi/gwtools/simulator/internal/simtestcore"
	"github.com/gwdmi/gwtools/simulator/store"
)

// fakeDurable (a syncer) records what the server syncs, and fails when told to.
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

func dimmer(env []simtest.F, value string) []simtest.F {
	return append(env, simtest.S("sn", simtest.SN('a', 5)), simtest.S("type", "Light Dimmer"), simtest.S("dimming", value))
}

// TestDurable: through the HTTP server, each applied change is synced
// before its answer, a rejected one is not; when syncing fails the change
// is not acknowledged: 503 storage_failed in the request's format.
func TestDurable(t *testing.T) {
	d := &fakeDurable{}
	f := simtest.Fleet()
	st := store.New(f, 0)
	log := slog.New(slog.DiscardHandler)
	srv := server.New(server.Config{Auth: f.Authenticator(), Logger: log,
		Backend: server.Backend{State: durable{server.MemoryState(st), st, d, log}}})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	c := simtest.NewClient(t, hs.URL)
	sn := simtest.SN('a', 5)
	c.Send(device.SendCommand, device.JSON, dimmer(c.Envelope(), "20")).OK(t, device.JSON)
	c.Send(device.SendCommand, device.JSON, dimmer(c.Envelope(), "0")).Fail(t, device.JSON, 400, device.CodeInvalidField, "dimming")
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
		c.Send(device.SendCommand, f, dimmer(c.Envelope(), "21")).Fail(t, f, http.StatusServiceUnavailable, device.CodeStorageFailed, "")
	}
	if status, _, _ := c.Admin(http.MethodPost, "/_sim/reset", ""); status != http.StatusServiceUnavailable {
		t.Errorf("reset with a failing state file: %d", status)
	}
}
