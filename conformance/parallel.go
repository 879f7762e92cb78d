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
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// Parallel runs split the checks between workers: the run's own process is
// worker 0, and workers 1..N-1 are the same binary started again with
// --worker. Each worker uses its own device of every type (the i-th on the
// tested gateway), so no two workers touch one device at the same time;
// the checks that share more than a device (messages, which append to the
// gateway's log; the whole-fleet checks; the probes) all run on worker 0.
// Every check runs on exactly one worker, chosen by its case, so the
// merged report has the same verdicts as a serial run with the same seed.

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
	env.assignOnce.Do(func() { env.assignment = assign(catalog(), workers) })
	return env.assignment[id]
}

// assign shares the checks between workers. Worker 0 takes what shares
// more than a device: the whole-fleet checks, the probes of messages, every
// message case (a valid one appends to the gateway's log, and so does the
// control of a refused one), the effect checks of messages and those that
// watch other devices (.isolation). The other checks go to the
// worker with the least work so far, heaviest first, weighed by what they
// cost against a slow target. Every process of a run
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
		if strings.HasPrefix(c, "fleet.") {
			return true
		}
		// Messages and what watches other devices: worker 0 alone.
		if strings.HasPrefix(c, "effect.message.") || strings.HasSuffix(c, ".isolation") {
			return true
		}
		if strings.HasPrefix(c, "probe.") {
			// A probe of messages appends to the log; the others use
			// the worker's own devices.
			return cases[c][0].Operation == device.SendMessage.Name()
		}
		// Every message case: a valid one appends to the gateway's log,
		// and so does the control of a refused one (control.go).
		return strings.HasPrefix(c, "message.")
	}
	// What a check costs against a slow target: a request the target
	// accepts goes all the way (its latency, its store), and so does one
	// the store refuses; one refused before that is answered at once. So
	// a check of a slow case weighs five, of another one; a parity check
	// sends twice; a probe sends several. (Weights measured per kind of
	// check balanced worse: each kind mixes slow and quick cases.)
	slow := func(c string) bool {
		for _, m := range cases[c] {
			if strings.Contains(m.Assertion, "with status success") {
				return true
			}
			// Refused by the store, once the request waited its
			// latency like an accepted one.
			for _, code := range []string{device.CodeDeviceNotFound, device.CodeGatewayNotFound, device.CodeTypeMismatch} {
				if strings.Contains(m.Assertion, code) {
					return true
				}
			}
		}
		return false
	}
	weight := func(c string, m check.Meta) int {
		w := 1
		switch {
		case strings.HasPrefix(m.ID, "probe."):
			w = 10
		case slow(c):
			w = 5
		}
		if strings.HasSuffix(m.ID, ".parity") {
			w *= 2
		}
		return w
	}
	// Worker 0's share first; then the other checks, heaviest first, each
	// to the worker with the least weight so far (longest processing time
	// first: the workers end close together). A check needs nothing of
	// its case's other checks (each draws its own values from its ID), so
	// they may run on different workers.
	load := make([]int, workers)
	var rest []check.Meta
	total := 0
	for _, c := range order {
		for _, m := range cases[c] {
			w := weight(c, m)
			total += w
			if shared(c) || strings.HasPrefix(c, "message.") && strings.HasSuffix(m.ID, ".sim") {
				out[m.ID] = 0
				load[0] += w
			} else {
				rest = append(rest, m)
			}
		}
	}
	// Worker 0 starts its checks first (the others are started as new
	// processes), and its own share, mostly messages, is quick: measured
	// against a slow target it ended a quarter of a share before the
	// others, so it takes that much more.
	load[0] -= total / workers / 4
	weightOf := func(m check.Meta) int { return weight(caseOf(m.ID), m) }
	sort.SliceStable(rest, func(i, j int) bool { return weightOf(rest[i]) > weightOf(rest[j]) })
	for _, m := range rest {
		w := 0
		for i := range load {
			if load[i] < load[w] {
				w = i
			}
		}
		out[m.ID] = w
		load[w] += weightOf(m)
	}
	return out
}

// it declares a check as a spec of this process: in a --parallel run
// only the checks of this worker are declared, each worker's report holds
// its own, and the run that started them merges them in a serial run's
// order. Building the catalog, it only lists the check.
func (env *Env) it(m check.Meta, body func(ginkgo.SpecContext)) bool {
	if env.collect != nil {
		*env.collect = append(*env.collect, check.Finish(m))
		return false
	}
	if env.Workers > 1 && env.workerOf(m.ID, env.Workers) != env.Worker {
		return false
	}
	return check.It(m, body)
}

// mergeWorkers waits for the workers and adds each one's results to r's,
// in the order of a serial run. A worker that failed
// leaves its checks unrun, and the run says so: it cannot pass.
func mergeWorkers(r types.Report, ws []*Worker) types.Report {
	var its, others types.SpecReports
	for _, sr := range r.SpecReports {
		if sr.LeafNodeType.Is(types.NodeTypeIt) {
			its = append(its, sr)
		} else {
			others = append(others, sr)
		}
	}
	// Each worker's report is read as soon as it ends, all at once; they
	// are merged in worker order.
	type read struct {
		wr        types.Report
		err, rerr error
	}
	reads := make([]chan read, len(ws))
	for i, w := range ws {
		reads[i] = make(chan read, 1)
		go func() {
			var rd read
			rd.err = <-w.Done
			var b []byte
			if b, rd.rerr = os.ReadFile(w.Report); rd.rerr == nil {
				rd.rerr = json.Unmarshal(b, &rd.wr)
			}
			reads[i] <- rd
		}()
	}
	for i, w := range ws {
		rd := <-reads[i]
		wr, err, rerr := rd.wr, rd.err, rd.rerr
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
			if sr.LeafNodeType.Is(types.NodeTypeIt) {
				its = append(its, sr)
			}
		}
		if !wr.SuiteSucceeded {
			r.SuiteSucceeded = false
			for _, reason := range wr.SpecialSuiteFailureReasons {
				r.SpecialSuiteFailureReasons = append(r.SpecialSuiteFailureReasons, fmt.Sprintf("worker %d: %s", w.N, reason))
			}
		}
		if wr.EndTime.After(r.EndTime) {
			r.EndTime = wr.EndTime
		}
	}
	// In the order of a serial run: every check is declared from the one
	// place in check.It, so Ginkgo orders them by their text.
	sort.SliceStable(its, func(i, j int) bool { return its[i].LeafNodeText < its[j].LeafNodeText })
	// The suite's own nodes (AfterSuite) come after the checks, as in a
	// serial run.
	r.SpecReports = append(its, others...)
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
