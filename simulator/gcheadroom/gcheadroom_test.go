package gcheadroom

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

// goal is the runtime's heap goal at GOGC p for a live heap (without the
// stacks and globals, which the tests' arithmetic leaves out).
func goal(live uint64, p int) uint64 {
	g := live + live*uint64(p)/100
	if m := uint64(heapMinimum) * uint64(p) / 100; m > g {
		g = m
	}
	return g
}

// Percent reaches live + headroom with the least GOGC that does, and never
// goes below the base.
func TestPercentIsTheLeastThatKeepsTheHeadroom(t *testing.T) {
	const mib = 1 << 20
	for _, headroom := range []uint64{1 * mib, 16 * mib, 64 * mib} {
		for live := uint64(64 << 10); live < 4<<30; live = live*5/4 + 1 {
			for _, base := range []int{50, 100, 400} {
				p := Percent(live, headroom, base)
				if p < base {
					t.Fatalf("live %d, headroom %d, base %d: %d is below the base", live, headroom, base, p)
				}
				if p == maxPercent {
					continue
				}
				if g := goal(live, p); g < live+headroom && p > base {
					t.Fatalf("live %d, headroom %d: GOGC %d gives a goal of %d, less than %d", live, headroom, p, g, live+headroom)
				}
				if p > base && goal(live, p-1) >= live+headroom {
					t.Fatalf("live %d, headroom %d: GOGC %d is not the least (%d reaches %d)", live, headroom, p, p-1, live+headroom)
				}
			}
		}
	}
	// The figures the package comment and docs/performance.md use.
	if p := Percent(2*mib, 16*mib, 100); p != 450 {
		t.Errorf("2 MiB live, 16 MiB headroom: GOGC %d, want 450 (goal 18 MiB)", p)
	}
	if p := Percent(200*mib, 16*mib, 100); p != 100 {
		t.Errorf("200 MiB live: GOGC %d, want GOGC's own 100", p)
	}
	if p := Percent(2*mib, 0, 100); p != 100 {
		t.Errorf("no headroom: GOGC %d, want 100", p)
	}
}

func skipIfGOGC(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set in the environment: a Keeper leaves it alone")
	}
}

var keep [][]byte

// churn allocates n bytes of garbage in 1 KiB pieces, keeping the last 64
// alive as a server keeps its requests in flight, and returns how many
// collections ran meanwhile.
func churn(n int) uint32 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.NumGC
	ring := make([][]byte, 64)
	for i := 0; i < n/1024; i++ {
		ring[i%64] = make([]byte, 1024)
	}
	keep = ring
	runtime.ReadMemStats(&ms)
	keep = nil
	return ms.NumGC - before
}

// With the Keeper, the same garbage takes half the collections or fewer;
// stopped, the collector is back to GOGC's pace and GOGC to its value.
func TestKeeperCollectsLessOften(t *testing.T) {
	skipIfGOGC(t)
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	runtime.GC()
	plain := churn(256 << 20)

	// 64 MiB rather than gwsim's 16: the live heap a cycle reads includes
	// what was allocated while it marked, 8 MiB under -race on a busy
	// machine, and the test must not depend on it.
	k := Start(64 << 20)
	if k == nil {
		t.Fatal("Start returned no Keeper with GOGC unset")
	}
	runtime.GC() // a cycle to read the live heap from
	kept := churn(256 << 20)
	p := k.Percent()
	k.Stop()
	t.Logf("256 MiB of garbage: %d collections at GOGC 100, %d with a 64 MiB headroom (GOGC %d)", plain, kept, p)
	if p <= 100 {
		t.Errorf("the Keeper set GOGC %d on a small live heap, want more than 100", p)
	}
	if kept*2 > plain {
		t.Errorf("%d collections with the headroom against %d without: want at least half as many", kept, plain)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after Stop GOGC is %d, want 100 back", got)
	}
	// No finalizer armed before Stop sets GOGC again. (The collections'
	// count after Stop is no test of it: the live heap a cycle reads
	// includes what was allocated while it marked, which under -race
	// grew to 8 MiB, and GOGC 100 doubles that.)
	if again := churn(64 << 20); again == 0 {
		t.Fatal("no collection in 64 MiB of garbage")
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("collections after Stop set GOGC to %d: the Keeper still acts", got)
	}
}

// A live heap larger than the headroom leaves GOGC as it was: a large
// fleet's memory is not doubled again.
func TestKeeperLeavesALargeHeapAlone(t *testing.T) {
	skipIfGOGC(t)
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	k := Start(16 << 20)
	defer k.Stop()
	big := make([][]byte, 128)
	for i := range big {
		big[i] = make([]byte, 1<<20)
	}
	runtime.GC()
	runtime.GC() // the finalizer of the first cycle arms the second
	churn(64 << 20)
	if p := k.Percent(); p != 100 {
		t.Errorf("128 MiB live, 16 MiB headroom: GOGC %d, want 100", p)
	}
	runtime.KeepAlive(big)
}

// GOGC in the environment is the user's choice; headroom 0 is off.
func TestStartDoesNothingWhenTold(t *testing.T) {
	if k := Start(0); k != nil {
		k.Stop()
		t.Error("Start(0) returned a Keeper")
	}
	t.Setenv("GOGC", "200")
	if Enabled() {
		t.Error("Enabled with GOGC set")
	}
	if k := Start(16 << 20); k != nil {
		k.Stop()
		t.Error("Start returned a Keeper with GOGC set in the environment")
	}
	var nilKeeper *Keeper
	nilKeeper.Stop() // callers stop what Start returned, nil or not
}

// One Keeper at a time: a second Start while one runs returns nil, and
// stopping the first lets the next one start.
func TestOneKeeperAtATime(t *testing.T) {
	skipIfGOGC(t)
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	k := Start(16 << 20)
	if k == nil {
		t.Fatal("no Keeper")
	}
	if k2 := Start(16 << 20); k2 != nil {
		k2.Stop()
		t.Error("a second Keeper started while the first runs")
	}
	k.Stop()
	k.Stop() // twice is once
	k3 := Start(16 << 20)
	if k3 == nil {
		t.Fatal("no Keeper after the first stopped")
	}
	k3.Stop()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC %d after both stopped, want 100", got)
	}
}
