package schedule_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/internal/schedule"
)

// Tasks of one key run one after another in the order given, never two
// at once; the keys run side by side.
func TestChainsKeepEachKeyInOrderAndRunKeysSideBySide(t *testing.T) {
	keys := []string{"dimmer", "thermostat", "gw:messages"}
	var mu sync.Mutex
	order := map[string][]int{}
	inFlight := map[string]int{}
	var most, together atomic.Int64
	var running atomic.Int64
	var tasks []schedule.Task
	for i := 0; i < 30; i++ {
		k, n := keys[i%len(keys)], i
		tasks = append(tasks, schedule.Task{ID: fmt.Sprint(n), Key: k, Run: func() {
			mu.Lock()
			inFlight[k]++
			if int64(inFlight[k]) > most.Load() {
				most.Store(int64(inFlight[k]))
			}
			mu.Unlock()
			if r := running.Add(1); r > together.Load() {
				together.Store(r)
			}
			time.Sleep(2 * time.Millisecond)
			running.Add(-1)
			mu.Lock()
			inFlight[k]--
			order[k] = append(order[k], n)
			mu.Unlock()
		}})
	}
	p := schedule.Chains(tasks)
	if most.Load() != 1 {
		t.Errorf("%d tasks of one key ran at once", most.Load())
	}
	if together.Load() < 2 {
		t.Errorf("the keys ran one after another (at most %d tasks at once)", together.Load())
	}
	for _, k := range keys {
		for i := 1; i < len(order[k]); i++ {
			if order[k][i] < order[k][i-1] {
				t.Errorf("%s ran out of order: %v", k, order[k])
			}
		}
		if len(order[k]) != 10 {
			t.Errorf("%s ran %d tasks, want 10", k, len(order[k]))
		}
	}
	if p.Done() != 30 || p.Chains() != 3 {
		t.Errorf("Done() = %d, Chains() = %d; want 30 and 3", p.Done(), p.Chains())
	}
}

// Longest names the chain that ends last, counting its tasks.
func TestLongestIsTheChainThatEndsLast(t *testing.T) {
	var tasks []schedule.Task
	for i := 0; i < 2; i++ {
		tasks = append(tasks, schedule.Task{Key: "short", Run: func() {}})
	}
	for i := 0; i < 5; i++ {
		tasks = append(tasks, schedule.Task{Key: "long", Run: func() { time.Sleep(3 * time.Millisecond) }})
	}
	p := schedule.NewProgress(tasks)
	if _, ok := p.Longest(); ok {
		t.Fatal("a chain was named before any ran")
	}
	p.Run(tasks)
	ch, ok := p.Longest()
	if !ok || ch.Key != "long" || ch.Done != 5 || ch.Total != 5 || ch.Left != 0 {
		t.Fatalf("Longest() = %+v, %v; want the long chain, ended", ch, ok)
	}
}

// Trips names the key with the most round trips one after another, the
// first in order among equals, and ignores what counts nothing.
func TestTripsLongestIsTheKeyWithTheMost(t *testing.T) {
	var tr schedule.Trips
	if _, _, _, ok := tr.Longest(); ok {
		t.Fatal("a key was named before any round trip")
	}
	tr.Add("thermostat", 3, 300*time.Millisecond)
	tr.Add("dimmer", 2, 100*time.Millisecond)
	tr.Add("dimmer", 1, 50*time.Millisecond)
	tr.Add("", 9, time.Second)
	tr.Add("relay", 0, time.Second)
	key, n, took, ok := tr.Longest()
	if !ok || key != "dimmer" || n != 3 || took != 150*time.Millisecond {
		t.Fatalf("Longest() = %q, %d, %s, %v; want dimmer, 3, 150ms (first among equals)", key, n, took, ok)
	}
}

// N runs every job, never more than n at once; n of 1 runs them in order.
func TestNBoundsTheJobsInFlight(t *testing.T) {
	var running, most atomic.Int64
	var order []int
	var mu sync.Mutex
	jobs := make([]func(), 12)
	for i := range jobs {
		jobs[i] = func() {
			if r := running.Add(1); r > most.Load() {
				most.Store(r)
			}
			time.Sleep(time.Millisecond)
			running.Add(-1)
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		}
	}
	schedule.N(jobs, 3)
	if len(order) != 12 || most.Load() > 3 || most.Load() < 2 {
		t.Errorf("%d jobs ran, at most %d at once; want 12, 2 or 3 at once", len(order), most.Load())
	}
	order, most = nil, atomic.Int64{}
	schedule.N(jobs, 1)
	for i, j := range order {
		if i != j {
			t.Fatalf("n = 1 ran out of order: %v", order)
		}
	}
}
