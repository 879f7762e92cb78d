package schedule

import (
	"testing"
	"time"
)

// TestLongestKnowsItsPaceOnlyOnceMeasured: before minPaced tasks have
// ended, the chain expected last has no time left (Unknown), however
// slow its first tasks were; after, a chain with too few of its own is
// expected at the mean pace of the chains that have enough. Of chains not
// known, the one with the most tasks left is named.
func TestLongestKnowsItsPaceOnlyOnceMeasured(t *testing.T) {
	p := &Progress{start: time.Now().Add(-10 * time.Second), order: []string{"a", "b"}, chains: map[string]*chain{
		"a": {done: 20, total: 100},
		"b": {done: 0, total: 150},
	}}
	if ch, ok := p.Longest(); !ok || !ch.Unknown || ch.Left != 0 || ch.Key != "b" {
		t.Errorf("after 20 tasks: %+v, want b, not known", ch)
	}
	p.chains["a"].done = 60 // 10 s for 60: 1/6 s each
	ch, ok := p.Longest()
	if want := 150 * (10 * time.Second / 60); !ok || ch.Unknown || ch.Key != "b" || ch.Left < want-time.Second || ch.Left > want+time.Second {
		t.Errorf("after 60 tasks: %+v, want b with about %s left at a's pace", ch, want)
	}
}
