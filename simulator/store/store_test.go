package store

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

const acct = "5f3a9c0e1b2d4f6a8c0e1b2d"

func sn(g, i int) string { return fmt.Sprintf("%016x%016x", g, i) }
func mac(g int) string   { return fmt.Sprintf("%012x", 0xa00+g) }

// testFleet has gateways of devices, types in table order.
func testFleet(gateways, perGateway int) *fleet.Fleet {
	a := fleet.Account{ID: acct, APIKeys: []fleet.APIKey{{Key: "k", Secret: "s"}}}
	for g := 0; g < gateways; g++ {
		gw := fleet.Gateway{MAC: mac(g)}
		for i := 0; i < perGateway; i++ {
			gw.Devices = append(gw.Devices, fleet.Device{SN: sn(g, i), Type: device.Types[i%len(device.Types)].Name, Name: fmt.Sprint("d", i)})
		}
		a.Gateways = append(a.Gateways, gw)
	}
	f := &fleet.Fleet{Accounts: []fleet.Account{a}}
	if err := f.Check(); err != nil {
		panic(err)
	}
	return f
}

func dimmer() *device.Type { t, _ := device.LookupType("Light Dimmer"); return t }

func setDim(n int) device.Setting { return device.Setting{Index: 0, Num: float64(n)} }

func TestCommandRenameAndErrors(t *testing.T) {
	s := New(testFleet(2, len(device.Types)), 0)
	dimSN := sn(0, 5) // type index 5: Light Dimmer
	if err := s.Command(acct, mac(0), dimSN, dimmer(), []device.Setting{setDim(42)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename(acct, mac(0), dimSN, "Hall"); err != nil {
		t.Fatal(err)
	}
	d, ok := s.Device(strings.ToUpper(mac(0)), strings.ToUpper(dimSN))
	if !ok || d.State["dimming"] != int64(42) || d.Name != "Hall" || d.Type != "Light Dimmer" || d.SN != dimSN {
		t.Errorf("device %+v %v", d, ok)
	}
	for _, tc := range []struct {
		name         string
		account, mac string
		sn           string
		typ          *device.Type
		code         string
	}{
		{"unknown account", "ffffffffffffffffffffffff", mac(0), dimSN, dimmer(), device.CodeGatewayNotFound},
		{"unknown gateway", acct, "ffffffffffff", dimSN, dimmer(), device.CodeGatewayNotFound},
		{"unknown device", acct, mac(0), sn(0, 99), dimmer(), device.CodeDeviceNotFound},
		{"device of another gateway", acct, mac(1), sn(0, 99), dimmer(), device.CodeDeviceNotFound},
		{"bad sn", acct, mac(0), "xyz", dimmer(), device.CodeDeviceNotFound},
		{"type mismatch", acct, mac(0), sn(0, 0), dimmer(), device.CodeTypeMismatch},
	} {
		err := s.Command(tc.account, tc.mac, tc.sn, tc.typ, []device.Setting{setDim(7)})
		if err == nil || err.Code != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
	if err := s.Rename(acct, mac(0), sn(0, 99), "x"); err == nil || err.Code != device.CodeDeviceNotFound {
		t.Errorf("rename unknown: %v", err)
	}
	if d, _ := s.Device(mac(0), dimSN); d.State["dimming"] != int64(42) {
		t.Errorf("a refused command changed the state: %+v", d)
	}
	if _, ok := s.Device(mac(9), dimSN); ok {
		t.Error("device on an unknown gateway")
	}
	if _, _, _, ok := s.DeviceOf(acct, mac(0), sn(0, 99)); ok {
		t.Error("DeviceOf an unknown device")
	}
	if typ, st, name, ok := s.DeviceOf(acct, mac(0), dimSN); !ok || typ != dimmer() || st.Num[0] != 42 || name != "Hall" {
		t.Errorf("DeviceOf %v %v %q", typ, st, name)
	}
	if a, g, d := s.Counts(); a != 1 || g != 2 || d != 2*len(device.Types) {
		t.Errorf("counts %d %d %d", a, g, d)
	}
	if got := s.MACs(); len(got) != 2 || got[0] != mac(0) || !s.HasGateway(acct, mac(1)) || s.HasGateway(acct, mac(5)) {
		t.Errorf("MACs %v", got)
	}

	s.Reset()
	if d, _ := s.Device(mac(0), dimSN); d.State["dimming"] != int64(100) || d.Name != "d5" {
		t.Errorf("after reset: %+v", d)
	}
}

func TestMessagesRing(t *testing.T) {
	s := New(testFleet(2, 1), 3)
	if err := s.Message(acct, "ffffffffffff", Message{Type: "m", Value: "a=1"}); err == nil || err.Code != device.CodeGatewayNotFound {
		t.Errorf("message to an unknown gateway: %v", err)
	}
	for i := 1; i <= 7; i++ {
		if err := s.Message(acct, mac(0), Message{Time: time.Unix(int64(i), 0), Type: "m", Value: fmt.Sprint("n=", i)}); err != nil {
			t.Fatal(err)
		}
		msgs, total, ok := s.Messages(mac(0))
		if !ok || total != uint64(i) || len(msgs) != min(i, 3) || msgs[len(msgs)-1].Value != fmt.Sprint("n=", i) {
			t.Fatalf("after %d: %v %d", i, msgs, total)
		}
		for j := 1; j < len(msgs); j++ {
			if !msgs[j-1].Time.Before(msgs[j].Time) {
				t.Fatalf("not oldest first: %v", msgs)
			}
		}
	}
	if msgs, total, _ := s.Messages(mac(1)); len(msgs) != 0 || total != 0 {
		t.Errorf("other gateway: %v", msgs)
	}
	dump, truncated := s.Dump(0)
	if truncated || dump[0].Gateways[0].MessagesTotal != 7 || len(dump[0].Gateways[0].Messages) != 3 {
		t.Errorf("dump %+v", dump)
	}
	s.Reset()
	if msgs, total, _ := s.Messages(mac(0)); len(msgs) != 0 || total != 0 {
		t.Errorf("after reset: %v %d", msgs, total)
	}
}

func TestDumpLimit(t *testing.T) {
	s := New(testFleet(3, 4), 0)
	all, truncated := s.Dump(0)
	if truncated || len(all[0].Gateways) != 3 || len(all[0].Gateways[2].Devices) != 4 {
		t.Errorf("full dump: %v %+v", truncated, all)
	}
	some, truncated := s.Dump(6)
	n := 0
	for _, g := range some[0].Gateways {
		n += len(g.Devices)
	}
	if !truncated || n != 6 {
		t.Errorf("Dump(6): %d devices, truncated %v", n, truncated)
	}
}

// TestConcurrentCommands: many goroutines command the same and different
// devices while others read, rename and log messages. Commands to one
// device are serialized by the test so that the last acknowledged one is
// known; the final state must be exactly that. Run with -race.
func TestConcurrentCommands(t *testing.T) {
	const gateways, perGateway = 4, 12
	s := New(testFleet(gateways, perGateway), 50)
	type target struct {
		mac, sn string
		mu      sync.Mutex
		last    int
	}
	var targets []*target
	for g := 0; g < gateways; g++ {
		for i := 5; i < perGateway; i += len(device.Types) { // the dimmers
			targets = append(targets, &target{mac: mac(g), sn: sn(g, i)})
		}
	}
	const workers, rounds = 8, 200
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				tg := targets[(w+r)%len(targets)] // workers meet on the same devices
				v := 1 + (w*rounds+r)%100
				tg.mu.Lock()
				if err := s.Command(acct, tg.mac, tg.sn, dimmer(), []device.Setting{setDim(v)}); err != nil {
					t.Error(err)
				} else {
					tg.last = v
				}
				tg.mu.Unlock()
			}
		}(w)
	}
	// Unserialized writers on the same device: the state must be one of
	// the values written, never torn.
	hot := targets[0]
	hotSN := sn(0, 0) // an Appliance Module: its own device, written without the test's lock
	am, _ := device.LookupType("Appliance Module")
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				s.Command(acct, hot.mac, hotSN, am, []device.Setting{{Index: 0, Num: float64((w + r) % 2)}})
				s.Rename(acct, mac(w%gateways), sn(w%gateways, 1), fmt.Sprint("w", w, "r", r))
				s.Message(acct, mac(w%gateways), Message{Type: "m", Value: fmt.Sprint("w", w, "=", r)})
			}
		}(w)
	}
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds/4; r++ {
				s.Dump(0)
				s.Device(hot.mac, hot.sn)
				s.Messages(mac(r % gateways))
				s.Counts()
			}
		}()
	}
	wg.Wait()
	for _, tg := range targets {
		d, _ := s.Device(tg.mac, tg.sn)
		if d.State["dimming"] != int64(tg.last) {
			t.Errorf("%s/%s: dimming %v, want the last acknowledged %d", tg.mac, tg.sn, d.State["dimming"], tg.last)
		}
	}
	if d, _ := s.Device(hot.mac, hotSN); d.State["io"] != "On" && d.State["io"] != "Off" {
		t.Errorf("torn state %v", d.State)
	}
	for g := 0; g < gateways; g++ {
		msgs, total, _ := s.Messages(mac(g))
		if total != rounds || len(msgs) != 50 {
			t.Errorf("gateway %d: %d messages kept of %d", g, len(msgs), total)
		}
	}
}

func TestParseSN(t *testing.T) {
	if s, ok := ParseSN("0123456789abcdef0123456789ABCDEF"); !ok || s.String() != "0123456789abcdef0123456789abcdef" {
		t.Errorf("ParseSN: %v %v", s, ok)
	}
	for _, bad := range []string{"", "0123", "0123456789abcdef0123456789abcdeg", "0123456789abcdef0123456789abcdef0"} {
		if _, ok := ParseSN(bad); ok {
			t.Errorf("ParseSN(%q) ok", bad)
		}
	}
}

// A device keeps a record only once it differs from the fleet: the
// fleet's own state and name show until then, a refused change on an
// untouched device leaves it untouched, devices at the same position on
// other gateways are apart, and Reset goes back to the fleet.
func TestChangesOverlayTheFleet(t *testing.T) {
	f := testFleet(3, len(device.Types))
	dimSN := sn(1, 5)
	f.Accounts[0].Gateways[1].Devices[5].State = map[string]any{"dimming": 10}
	s := New(f, 0)
	if d, _ := s.Device(mac(1), dimSN); d.State["dimming"] != int64(10) || d.Name != "d5" {
		t.Fatalf("the fleet's state: %+v", d)
	}
	if d, _ := s.Device(mac(0), sn(0, 5)); d.State["dimming"] != int64(100) {
		t.Fatalf("the default state: %+v", d)
	}
	if err := s.Command(acct, mac(2), sn(2, 0), dimmer(), []device.Setting{setDim(7)}); err == nil {
		t.Fatal("a dimmer command to an Appliance Module was accepted")
	}
	if d, _ := s.Device(mac(2), sn(2, 0)); d.Type != "Appliance Module" || d.Name != "d0" || d.State["io"] != "Off" {
		t.Errorf("a refused command changed an untouched device: %+v", d)
	}
	for g := 0; g < 3; g++ {
		if err := s.Command(acct, mac(g), sn(g, 5), dimmer(), []device.Setting{setDim(20 + g)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Rename(acct, mac(1), dimSN, "Porch"); err != nil {
		t.Fatal(err)
	}
	for g := 0; g < 3; g++ {
		d, _ := s.Device(mac(g), sn(g, 5))
		want := "d5"
		if g == 1 {
			want = "Porch"
		}
		if d.State["dimming"] != int64(20+g) || d.Name != want {
			t.Errorf("gateway %d: %+v", g, d)
		}
	}
	s.Reset()
	if d, _ := s.Device(mac(1), dimSN); d.State["dimming"] != int64(10) || d.Name != "d5" {
		t.Errorf("after reset: %+v", d)
	}
	if d, _ := s.Device(mac(2), sn(2, 5)); d.State["dimming"] != int64(100) {
		t.Errorf("after reset: %+v", d)
	}
}
