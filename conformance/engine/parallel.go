package engine

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"os"
	"sort"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/internal/schedule"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// Parallel runs split the checks between workers: the run's own process is
// worker 0, and workers 1..N-1 are the same binary started again with
// --worker. Each worker uses its own device of every type (the i-th on the
// tested gateway), so no two workers touch one device at the same time;
// the checks that share more than a device (the whole-fleet checks, the
// effect checks that watch other devices or gateways, the probes of
// messages) all run on worker 0. The message checks run on every worker:
// each valid message of a worker is one of a kind (catalog.Bench.Base), and its checks look
// for their own messages among those the others append to the log
// (observer.Log.GainedMessage, observer.Log.UnchangedBy).
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

// workerOf is the worker that runs a check.
func (env *Env) workerOf(id string, workers int) int {
	if workers <= 1 {
		return 0
	}
	env.assignOnce.Do(func() { env.assignment = schedule.Workers(env.catalog().All(), workers) })
	return env.assignment[id]
}

// It declares a check as a spec of this process: in a --parallel run
// only the checks of this worker are declared, each worker's report holds
// its own, and the run that started them merges them in a serial run's
// order. Building the catalog, it only lists the check.
func (env *Env) It(m check.Meta, body func(context.Context)) bool {
	return env.ItAbout(m, nil, body)
}

// ItAbout declares a check whose requests are all about the one thing
// key names when the run starts (a device, a gateway's messages: ahead.go),
// so that it may run ahead of its place, in that thing's chain. A nil key:
// the check touches more, and runs in its place.
func (env *Env) ItAbout(m check.Meta, key func() string, body func(context.Context)) bool {
	if env.collect != nil {
		*env.collect = append(*env.collect, check.Finish(m))
		return false
	}
	if env.Workers > 1 && env.workerOf(m.ID, env.Workers) != env.Worker {
		return false
	}
	env.declareAhead(m, key, body)
	return check.It(m, func(ctx ginkgo.SpecContext) { env.runCheck(ctx, m.ID, body) })
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
				rd.wr, rd.rerr = decodeWorkerReport(b)
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
	// In one order whatever the split: by check ID (the report orders
	// the checks by ID again; this keeps the merged Ginkgo report stable).
	id := func(sr types.SpecReport) string { return check.IDFromLabels(sr.Labels()) }
	sort.SliceStable(its, func(i, j int) bool { return id(its[i]) < id(its[j]) })
	// The suite's own nodes (AfterSuite) come after the checks, as in a
	// serial run.
	r.SpecReports = append(its, others...)
	r.RunTime = r.EndTime.Sub(r.StartTime)
	return r
}

// A worker hands its Ginkgo report to the run that started it in gob,
// the encoding Ginkgo's own parallel processes use for these types (a
// report entry's value goes as its JSON, as in a JSON report): against a
// 20 ms target the run that merges eight workers spent most of a second
// decoding their reports as JSON once the last one ended.

func encodeWorkerReport(r types.Report) ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(r)
	return b.Bytes(), err
}

func decodeWorkerReport(b []byte) (types.Report, error) {
	var r types.Report
	err := gob.NewDecoder(bytes.NewReader(b)).Decode(&r)
	return r, err
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
