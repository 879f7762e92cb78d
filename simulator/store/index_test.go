package store

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

func devicesOf(n int, sn func(int) string) []fleet.Device {
	ds := make([]fleet.Device, n)
	for i := range ds {
		ds[i] = fleet.Device{SN: sn(i), Type: "Light Dimmer"}
	}
	return ds
}

// Every device is found at its position and nothing else is found, for
// sizes around the table's growth points and for keys that differ only at
// the end.
func TestSNIndex(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 767, 768, 769, 1000, 5000} {
		ds := devicesOf(n, func(i int) string { return fmt.Sprintf("%032x", i) })
		ix := newSNIndex(ds)
		if len(ix.slots)&(len(ix.slots)-1) != 0 || n > 0 && float64(n)/float64(len(ix.slots)) > 0.75 {
			t.Errorf("%d devices in %d slots", n, len(ix.slots))
		}
		for i, d := range ds {
			if pos, ok := ix.find(ds, d.SN); !ok || pos != uint32(i) {
				t.Fatalf("%d devices: %s at %d, %v", n, d.SN, pos, ok)
			}
		}
		for _, miss := range []string{fmt.Sprintf("%032x", n), "", "ffffffffffffffffffffffffffffffff"} {
			if _, ok := ix.find(ds, miss); ok {
				t.Errorf("%d devices: found %q", n, miss)
			}
		}
	}
}

// An unchecked fleet may repeat an sn: the last one wins, as in a map.
func TestSNIndexRepeated(t *testing.T) {
	ds := devicesOf(4, func(i int) string { return fmt.Sprintf("%032x", i%2) })
	ix := newSNIndex(ds)
	if pos, ok := ix.find(ds, fmt.Sprintf("%032x", 1)); !ok || pos != 3 {
		t.Errorf("%d %v", pos, ok)
	}
}

// Memory per device of the whole store stays far below a map's, and a
// million-device store is measured by the benchmark (make bench).
func TestStoreBytesPerDevice(t *testing.T) {
	f := fleet.Generate(1, 20, 1000)
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	s := New(f, 0)
	runtime.GC()
	runtime.ReadMemStats(&b)
	runtime.KeepAlive(s)
	per := float64(int64(b.HeapAlloc)-int64(a.HeapAlloc)) / 20000
	t.Logf("%.0f bytes per device", per)
	if per > 120 {
		t.Errorf("the store takes %.0f bytes per device", per)
	}
}

func BenchmarkFind(b *testing.B) {
	f := fleet.Generate(1, 1, 1000)
	s := New(f, 0)
	g := s.ix.gwOrder[0]
	sns := make([]string, len(g.loaded))
	for i, d := range g.loaded {
		sns[i] = d.SN
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := g.find(sns[i%len(sns)]); err != nil {
			b.Fatal(err)
		}
	}
}
