package fleetmem

import (
	"runtime"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator/fleet"
	"github.com/gwdmi/gwtools/simulator/store"
)

func TestMem(t *testing.T) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		t0 := time.Now()
		f := fleet.Generate(1, n/1000, 1000)
		t1 := time.Now()
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		s := store.New(f, 0)
		t2 := time.Now()
		f = nil
		runtime.GC()
		runtime.ReadMemStats(&b)
		runtime.KeepAlive(s)
		t.Logf("%d: gen %v load %v heap/dev %.1f", n, t1.Sub(t0), t2.Sub(t1), float64(b.HeapAlloc-a.HeapAlloc)/float64(n))
	}
}
