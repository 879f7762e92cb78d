package main

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestNoFalseFailureOnAnySeed runs the whole suite against the embedded
// simulator for 50 seeds at --fail-on should: a faithful target never fails,
// whatever the values drawn and the spec order. Seed 1795380519 is the one
// that once drew "trench coat_level=301".
func TestNoFalseFailureOnAnySeed(t *testing.T) {
	simtest.Heavy(t)
	seeds := []int64{1795380519}
	for s := int64(1); len(seeds) < 50; s++ {
		seeds = append(seeds, s*7919+int64(len(seeds))*104729)
	}
	workers := runtime.GOMAXPROCS(0)
	if workers > 4 {
		workers = 4
	}
	var (
		mu       sync.Mutex
		failures []string
		wg       sync.WaitGroup
		next     = make(chan int64)
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range next {
				r := gwconform(t, "--fail-on", "should", "--seed", strconv.FormatInt(seed, 10))
				doc := reports(t, r.dir)
				if r.code != 0 || doc.Verdict != "PASS" {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("seed %d: exit %d, verdict %s, failed %v\n%s", seed, r.code, doc.Verdict, failed(doc), tail(r.stdout)))
					mu.Unlock()
				}
			}
		}()
	}
	for _, s := range seeds {
		next <- s
	}
	close(next)
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
}
