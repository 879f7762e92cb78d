// Package gcheadroom keeps a floor under the Go collector's heap goal: room
// for at least a given number of bytes of garbage between two collections,
// however small the live heap is.
//
// Why gwsim serve needs it. The collector starts a cycle when the heap has
// grown by GOGC percent (100) of the live heap, but never below 4 MiB in
// all. gwsim's live heap is about 2 MiB (the fleet, the journal, the client
// report's ring) and a request leaves about 3 KB of garbage, most of it
// net/http's own, so under load it collected every 700 requests or so: some
// 50 cycles a second, each with its stop-the-world pauses, its mark workers
// and their context switches. A bare net/http handler, with less than 1 MiB
// live, collected every 1,000 requests. docs/performance.md ("GC headroom")
// has the measurements.
//
// A Keeper sets GOGC after every cycle, from the live heap the cycle
// found, so that the next goal is about live + headroom, and never lower
// than what GOGC would give on its own. With a small live heap that is a
// higher GOGC; once the live heap is larger than the headroom (a fleet of a
// million devices) it is GOGC itself, and the Keeper changes nothing. The
// memory it costs is the headroom, at most, and only while requests make
// garbage: an idle gwsim makes none.
//
// The process's collector is one: a Keeper is for a program's main (gwsim
// serve), never for a library or an app's test that embeds the simulator.
// gwconform does not keep one: its run (3 s, against the embedded
// simulator) and its load generator measured no faster with it.
// A GOGC set in the environment is the user's choice and wins: Start then
// does nothing (Enabled says so). GOMEMLIMIT still bounds the heap as
// always.
package gcheadroom

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// DefaultHeadroom is gwsim serve's --gc-headroom: 16 MiB.
const DefaultHeadroom = 16 << 20

// heapMinimum is the runtime's floor under the heap goal at GOGC=100; it
// scales with GOGC (runtime/mgcpacer.go: defaultHeapMinimum).
const heapMinimum = 4 << 20

// maxPercent bounds the GOGC a Keeper sets, whatever the live heap reads.
const maxPercent = 10_000

// Percent is the GOGC that gives a heap goal of about live + headroom bytes,
// and never less than base (the GOGC the process had). The goal at GOGC p is
// the larger of live × (1 + p/100) and heapMinimum × p/100, so p is the
// smaller of the two that reach live + headroom, each rounded up.
func Percent(live, headroom uint64, base int) int {
	if headroom == 0 {
		return base
	}
	if live == 0 {
		live = 1
	}
	p := ceilDiv(headroom*100, live)
	if q := ceilDiv((live+headroom)*100, heapMinimum); q < p {
		p = q
	}
	if p > maxPercent {
		p = maxPercent
	}
	if int(p) < base {
		return base
	}
	return int(p)
}

func ceilDiv(a, b uint64) uint64 { return (a + b - 1) / b }

// Keeper resets GOGC after every collection. The zero value is not usable:
// call Start.
type Keeper struct {
	headroom uint64
	base     int

	mu      sync.Mutex
	stopped bool
	current int
	sample  []metrics.Sample
}

// Enabled reports whether a Keeper would act in this process: false when
// GOGC is set in the environment, which is the user's to decide.
func Enabled() bool {
	_, set := os.LookupEnv("GOGC")
	return !set
}

// active is set while a Keeper runs: the process has one collector, so one
// Keeper at a time (tests start many gwsim serve in one process).
var active atomic.Bool

// Start keeps headroom bytes of room for garbage from now on and returns
// the Keeper, or nil when headroom is 0, GOGC is set in the environment or
// another Keeper runs. Stop it to give GOGC back its value from before.
func Start(headroom uint64) *Keeper {
	if headroom == 0 || !Enabled() || !active.CompareAndSwap(false, true) {
		return nil
	}
	gogc := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(gogc)
	base := int(gogc[0].Value.Uint64())
	if base <= 0 { // the collector is off (SetGCPercent(-1) by the caller) or at 0: nothing to keep
		active.Store(false)
		return nil
	}
	k := &Keeper{headroom: headroom, base: base, current: base,
		sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}}
	k.adjust()
	k.arm()
	return k
}

// Percent is the GOGC the Keeper set last.
func (k *Keeper) Percent() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.current
}

// Stop stops adjusting and restores the GOGC the process had at Start.
func (k *Keeper) Stop() {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	k.stopped = true
	debug.SetGCPercent(k.base)
	k.current = k.base
	active.Store(false)
}

// arm sets a finalizer on a fresh object that nothing references: the
// collector runs it after the next cycle, and it arms the next one.
func (k *Keeper) arm() {
	s := new(sentinel)
	runtime.SetFinalizer(s, func(*sentinel) {
		if k.adjust() {
			k.arm()
		}
	})
}

// sentinel is a pointer-sized object: the runtime does not run finalizers
// of zero-sized or tiny-allocated objects reliably.
type sentinel struct{ _ *byte }

// adjust sets GOGC from the live heap the last cycle found. It returns
// false once the Keeper is stopped.
func (k *Keeper) adjust() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return false
	}
	metrics.Read(k.sample)
	live := k.sample[0].Value.Uint64()
	if live == 0 { // no cycle yet: what is allocated now is an upper bound
		live = k.sample[1].Value.Uint64()
	}
	p := Percent(live, k.headroom, k.base)
	// Small moves are noise in the live heap; leave GOGC alone.
	if d := p - k.current; d > k.current/20 || -d > k.current/20 {
		debug.SetGCPercent(p)
		k.current = p
	}
	return true
}
