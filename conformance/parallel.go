package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/simulator/fleet"
)

// Parallel runs split the checks between workers: the run's own process is
// worker 0, and workers 1..N-1 are the same binary started again with
// --worker. Each worker uses its own device of every type (the i-th on the
// tested gateway), so no two workers touch one device at the same time;
// the checks that share more than a device (messages, which append to the
// gateway's log; the whole-fleet checks; the probes) all run on worker 0.
// Every check runs on exactly one worker, chosen by its case, so the
// merged report has the same verdicts as a serial run with the same seed.

// otherWorker is the skip reason of a check another worker runs; the merge
// replaces it with that worker's result.
const otherWorker = "run by another worker"

// MaxParallel bounds --parallel's default: the checks wait on the network,
// not the CPU, so more workers than cores still pay.
const MaxParallel = 8

// Capacity is how many workers a fleet supports: the fewest devices of any
// type present on the tested gateway.
func Capacity(f *fleet.Fleet) int {
	_, g, err := f.TestedGateway()
	if err != nil {
		return 1
	}
	count := map[string]int{}
	for _, d := range g.Devices {
		count[d.Type]++
	}
	n := 0
	for _, c := range count {
		if n == 0 || c < n {
			n = c
		}
	}
	return max(n, 1)
}

// WorkerTarget is the fleet's target with worker i's device of each type:
// the i-th device of that type on the tested gateway.
func WorkerTarget(f *fleet.Fleet, t *fleet.Target, i int) *fleet.Target {
	w := *t
	w.Devices = map[string]fleet.Device{}
	_, g, err := f.TestedGateway()
	if err != nil {
		return &w
	}
	seen := map[string]int{}
	for _, d := range g.Devices {
		if seen[d.Type] == i {
			w.Devices[d.Type] = d
		}
		seen[d.Type]++
	}
	return &w
}

// caseOf is the case a check ID belongs to: its checks run together.
func caseOf(id string) string {
	for {
		trimmed := id
		for _, s := range []string{".json", ".xml", ".parity", ".contract", ".sim"} {
			trimmed = strings.TrimSuffix(trimmed, s)
		}
		if trimmed == id {
			return id
		}
		id = trimmed
	}
}

// workerOf is the worker that runs a check.
func (env *Env) workerOf(id string, workers int) int {
	if workers <= 1 {
		return 0
	}
	env.assignOnce.Do(func() { env.assignment = assign(check.All(), workers) })
	return env.assignment[id]
}

// assign shares the checks between workers. Worker 0 takes what shares
// more than a device: the whole-fleet checks, the probes, every message
// case that appends to the gateway's log (a valid one) and every check of
// the log (.sim of a message case). The other cases go whole, in ID order,
// to the worker with the fewest checks so far. Every process of a run
// builds the same catalog, so each computes the same assignment.
func assign(all []check.Meta, workers int) map[string]int {
	out := make(map[string]int, len(all))
	cases := map[string][]check.Meta{}
	var order []string
	for _, m := range all {
		c := caseOf(m.ID)
		if _, ok := cases[c]; !ok {
			order = append(order, c)
		}
		cases[c] = append(cases[c], m)
	}
	sort.Strings(order)
	shared := func(c string) bool {
		if strings.HasPrefix(c, "fleet.") || strings.HasPrefix(c, "probe.") {
			return true
		}
		if strings.HasPrefix(c, "message.") {
			for _, m := range cases[c] {
				if strings.Contains(m.Assertion, "with status success") {
					return true
				}
			}
		}
		return false
	}
	// Worker 0's share first, so that the rest is spread around it.
	load := make([]int, workers)
	for _, c := range order {
		for _, m := range cases[c] {
			if shared(c) || strings.HasPrefix(c, "message.") && strings.HasSuffix(m.ID, ".sim") {
				out[m.ID] = 0
				load[0]++
			}
		}
	}
	for _, c := range order {
		if shared(c) {
			continue
		}
		w := 0
		for i := range load {
			if load[i] < load[w] {
				w = i
			}
		}
		for _, m := range cases[c] {
			if _, done := out[m.ID]; !done {
				out[m.ID] = w
				load[w]++
			}
		}
	}
	return out
}

// it declares a check that runs on its own worker only.
func (env *Env) it(m check.Meta, body func(ginkgo.SpecContext)) bool {
	return check.It(m, func(ctx ginkgo.SpecContext) {
		if env.Workers > 1 && env.workerOf(m.ID, env.Workers) != env.Worker {
			ginkgo.Skip(otherWorker)
		}
		body(ctx)
	})
}

// mergeWorkers waits for the workers and puts each check's result from
// the worker that ran it into r. A worker that failed leaves its checks
// unrun, and the run says so: it cannot pass.
func mergeWorkers(r types.Report, ws []*Worker) types.Report {
	byText := map[string]int{}
	for i, sr := range r.SpecReports {
		if sr.LeafNodeType.Is(types.NodeTypeIt) {
			byText[sr.FullText()] = i
		}
	}
	r.SpecReports = append(types.SpecReports(nil), r.SpecReports...)
	for _, w := range ws {
		err := <-w.Done
		b, rerr := os.ReadFile(w.Report)
		var wr types.Report
		if rerr == nil {
			rerr = json.Unmarshal(b, &wr)
		}
		if rerr != nil {
			logTail, _ := os.ReadFile(w.Log)
			if len(logTail) > 400 {
				logTail = logTail[len(logTail)-400:]
			}
			r.SpecialSuiteFailureReasons = append(r.SpecialSuiteFailureReasons,
				fmt.Sprintf("worker %d of --parallel gave no report (%v): %s", w.N, firstErr(err, rerr), bytes.TrimSpace(logTail)))
			r.SuiteSucceeded = false
			continue
		}
		for _, sr := range wr.SpecReports {
			if !sr.LeafNodeType.Is(types.NodeTypeIt) || (sr.State.Is(types.SpecStateSkipped) && sr.Failure.Message == otherWorker) {
				continue
			}
			i, ok := byText[sr.FullText()]
			if !ok {
				continue
			}
			if cur := r.SpecReports[i]; cur.State.Is(types.SpecStateSkipped) && cur.Failure.Message == otherWorker {
				r.SpecReports[i] = sr
			}
		}
		if !wr.SuiteSucceeded {
			for _, reason := range wr.SpecialSuiteFailureReasons {
				r.SpecialSuiteFailureReasons = append(r.SpecialSuiteFailureReasons, fmt.Sprintf("worker %d: %s", w.N, reason))
			}
		}
		if wr.EndTime.After(r.EndTime) {
			r.EndTime = wr.EndTime
		}
	}
	r.RunTime = r.EndTime.Sub(r.StartTime)
	return r
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
