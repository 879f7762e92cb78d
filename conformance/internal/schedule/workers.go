package schedule

import (
	"sort"

	"github.com/gwdmi/gwtools/conformance/check"
)

// Workers shares the checks between workers (--parallel), from the
// traits each check declares (check.Traits), never from its wording. Worker 0 takes the
// Shared checks, which touch more than a worker's own devices and share
// of the message log: the whole-fleet checks, the probes of messages and
// the effect checks that watch other devices or gateways. The other
// checks go, heaviest first, each to the worker with the least weight so
// far (longest processing time first: the workers end close together). A
// check needs nothing of its case's other checks (each draws its own
// values from its ID), so they may run on different workers. Every
// process of a run builds the same catalog, so each computes the same
// assignment.
func Workers(all []check.Meta, workers int) map[string]int {
	out := make(map[string]int, len(all))
	load := make([]int, workers)
	var rest []check.Meta
	total := 0
	for _, m := range all {
		w := m.Traits.Weight()
		total += w
		if m.Traits.Shared {
			out[m.ID] = 0
			load[0] += w
		} else {
			rest = append(rest, m)
		}
	}
	// Worker 0 starts its checks first (the others are started as new
	// processes), and its own share, mostly messages, is quick, so it
	// takes a third of a share more: with that the workers end together
	// against a near and a far target alike, where half a share more
	// makes worker 0 the last.
	load[0] -= total / workers / 3
	sort.SliceStable(rest, func(i, j int) bool { return rest[i].Traits.Weight() > rest[j].Traits.Weight() })
	for _, m := range rest {
		w := 0
		for i := range load {
			if load[i] < load[w] {
				w = i
			}
		}
		out[m.ID] = w
		load[w] += m.Traits.Weight()
	}
	return out
}
