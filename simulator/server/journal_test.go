package server

import (
	"fmt"
	"sync"
	"testing"
)

// Many writers and readers at once: every entry read is whole, the last
// ones come oldest first, and the count is exact.
func TestJournalConcurrent(t *testing.T) {
	j := NewJournal(64)
	const writers, each = 8, 2000
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				j.Add(Entry{Path: fmt.Sprintf("/%d/%d", w, i), Status: w, DurationUS: int64(i)})
			}
		}()
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			entries, _ := j.Last(0)
			if len(entries) > 64 {
				t.Errorf("%d entries", len(entries))
			}
			for _, e := range entries {
				if e.Path != fmt.Sprintf("/%d/%d", e.Status, e.DurationUS) {
					t.Errorf("torn entry %+v", e)
				}
			}
		}
	}()
	wg.Wait()
	close(stop)
	readers.Wait()
	entries, total := j.Last(0)
	if total != writers*each || len(entries) != 64 {
		t.Errorf("%d entries, total %d", len(entries), total)
	}
	// Each writer's entries are in its own order.
	last := map[int]int64{}
	for _, e := range entries {
		if prev, ok := last[e.Status]; ok && e.DurationUS <= prev {
			t.Errorf("writer %d: %d after %d", e.Status, e.DurationUS, prev)
		}
		last[e.Status] = e.DurationUS
	}
	j.Clear()
	j.Add(Entry{Path: "/after"})
	if entries, total := j.Last(10); len(entries) != 1 || entries[0].Path != "/after" || total != writers*each+1 {
		t.Errorf("after Clear: %v %d", entries, total)
	}
}
