package store

import (
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// TestIndex: the fleet's structure answers what a backend without local
// state asks: a device's type, or the error a request to it gets; the
// account a gateway is shown under; the fleet's size. A Store's Reset
// keeps the same Index.
func TestIndex(t *testing.T) {
	f := testFleet(3, 7)
	ix := NewIndex(f)
	for i := 0; i < 7; i++ {
		typ, err := ix.Find(acct, mac(2), sn(2, i))
		if err != nil || typ != device.Types[i%len(device.Types)] {
			t.Errorf("Find device %d: %v, %v", i, typ, err)
		}
	}
	for _, tc := range []struct {
		account, mac, sn, code, field string
	}{
		{"000000000000000000000000", mac(0), sn(0, 0), device.CodeGatewayNotFound, device.FieldMAC},
		{acct, mac(9), sn(0, 0), device.CodeGatewayNotFound, device.FieldMAC},
		{acct, mac(0), sn(1, 0), device.CodeDeviceNotFound, device.FieldSN},
		{acct, mac(0), sn(0, 7), device.CodeDeviceNotFound, device.FieldSN},
	} {
		typ, err := ix.Find(tc.account, tc.mac, tc.sn)
		if typ != nil || err == nil || err.Code != tc.code || err.Field != tc.field {
			t.Errorf("Find(%s, %s, %s): %v, %v; want %s on %s", tc.account, tc.mac, tc.sn, typ, err, tc.code, tc.field)
		}
	}
	if !ix.HasGateway(acct, mac(1)) || ix.HasGateway(acct, mac(3)) {
		t.Error("HasGateway")
	}
	if a, ok := ix.Owner("0000000000A01"[1:]); !ok || a != acct {
		t.Errorf("Owner of an upper-case mac: %q, %v", a, ok)
	}
	if _, ok := ix.Owner(mac(5)); ok {
		t.Error("Owner of an unknown gateway")
	}
	if a, g, d := ix.Counts(); a != 1 || g != 3 || d != 21 {
		t.Errorf("Counts: %d %d %d", a, g, d)
	}
	if m := ix.MACs(); len(m) != 3 || m[0] != mac(0) || m[2] != mac(2) {
		t.Errorf("MACs: %v", m)
	}
	s := New(f, 0)
	before := s.Index()
	s.Reset()
	if s.Index() != before || s.Index().Fleet() != f {
		t.Error("Reset rebuilt the Index")
	}
}
