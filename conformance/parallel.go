package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

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

// maxParallel bounds --parallel's default: the checks wait on the network,
// not the CPU, so more workers than cores still pay.
const maxParallel = 8

// capacity is how many workers a fleet supports: the fewest devices of any
// type present on the tested gateway.
func capacity(f *fleet.Fleet) int {
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

// workerTarget is the fleet's target with worker i's device of each type:
// the i-th device of that type on the tested gateway.
func workerTarget(f *fleet.Fleet, t *fleet.Target, i int) *fleet.Target {
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
func workerOf(id string, workers int) int {
	if workers <= 1 {
		return 0
	}
	assignOnce.Do(func() { assignment = assign(check.All(), workers) })
	return assignment[id]
}

var (
	assignOnce sync.Once
	assignment map[string]int
)

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
func it(m check.Meta, body func(ginkgo.SpecContext)) bool {
	return check.It(m, func(ctx ginkgo.SpecContext) {
		if env.Workers > 1 && workerOf(m.ID, env.Workers) != env.Worker {
			ginkgo.Skip(otherWorker)
		}
		body(ctx)
	})
}

// worker is a started worker process.
type worker struct {
	n      int
	cmd    *exec.Cmd
	report string
	log    string
	done   chan error
}

// startWorkers starts workers 1..n-1 on the same target, fleet and seed;
// each writes its Ginkgo report as JSON into dir.
func startWorkers(ctx context.Context, o Options, e *Env, n int, dir string) ([]*worker, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--parallel: cannot find this program to start workers: %w", err)
	}
	var ws []*worker
	for i := 1; i < n; i++ {
		w := &worker{n: i, report: filepath.Join(dir, fmt.Sprintf("worker-%d.json", i)), log: filepath.Join(dir, fmt.Sprintf("worker-%d.log", i)), done: make(chan error, 1)}
		args := []string{"run", "--target", e.BaseURL, "--seed", strconv.FormatInt(e.Seed, 10),
			"--worker", strconv.Itoa(i), "--workers", strconv.Itoa(n), "--worker-report", w.report,
			"--report-dir", filepath.Join(dir, strconv.Itoa(i)), "--skip-preflight", "--allow-partial", "--color", "never",
			"--timeout", o.Timeout.String(), "--fail-on", o.FailOn}
		if o.FleetFile != "" {
			args = append(args, "--fleet", o.FleetFile)
		}
		if o.Rate > 0 {
			args = append(args, "--rate", strconv.FormatFloat(o.Rate/float64(n), 'f', -1, 64))
		}
		if o.RatePerOp > 0 {
			args = append(args, "--rate-per-op", strconv.FormatFloat(o.RatePerOp/float64(n), 'f', -1, 64))
		}
		if o.MaxRequests > 0 {
			args = append(args, "--max-requests", strconv.Itoa(max(o.MaxRequests/n, 1)))
		}
		for _, c := range o.Checks {
			args = append(args, "--check", c)
		}
		for _, s := range o.Skips {
			args = append(args, "--skip", s)
		}
		if o.RerunFailed != "" {
			args = append(args, "--rerun-failed", o.RerunFailed)
		}
		cfg, _ := ginkgo.GinkgoConfiguration()
		if cfg.LabelFilter != "" {
			args = append(args, "--ginkgo.label-filter", cfg.LabelFilter)
		}
		for _, f := range cfg.FocusStrings {
			args = append(args, "--ginkgo.focus", f)
		}
		for _, s := range cfg.SkipStrings {
			args = append(args, "--ginkgo.skip", s)
		}
		logf, err := os.Create(w.log)
		if err != nil {
			return ws, err
		}
		w.cmd = exec.CommandContext(ctx, exe, args...)
		w.cmd.Stdout, w.cmd.Stderr = logf, logf
		// The admin token goes by the environment, never the command line
		// (which any user of the machine can read).
		w.cmd.Env = append(os.Environ(), "GWSIM_ADMIN_TOKEN="+e.AdminToken, "NO_COLOR=1")
		if err := w.cmd.Start(); err != nil {
			logf.Close()
			return ws, fmt.Errorf("--parallel: starting worker %d: %w", i, err)
		}
		go func() { w.done <- w.cmd.Wait(); logf.Close() }()
		ws = append(ws, w)
	}
	return ws, nil
}

// mergeWorkers waits for the workers and puts each check's result from
// the worker that ran it into r. A worker that failed leaves its checks
// unrun, and the run says so: it cannot pass.
func mergeWorkers(r types.Report, ws []*worker) types.Report {
	byText := map[string]int{}
	for i, sr := range r.SpecReports {
		if sr.LeafNodeType.Is(types.NodeTypeIt) {
			byText[sr.FullText()] = i
		}
	}
	r.SpecReports = append(types.SpecReports(nil), r.SpecReports...)
	for _, w := range ws {
		err := <-w.done
		b, rerr := os.ReadFile(w.report)
		var wr types.Report
		if rerr == nil {
			rerr = json.Unmarshal(b, &wr)
		}
		if rerr != nil {
			logTail, _ := os.ReadFile(w.log)
			if len(logTail) > 400 {
				logTail = logTail[len(logTail)-400:]
			}
			r.SpecialSuiteFailureReasons = append(r.SpecialSuiteFailureReasons,
				fmt.Sprintf("worker %d of --parallel gave no report (%v): %s", w.n, firstErr(err, rerr), bytes.TrimSpace(logTail)))
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
				r.SpecialSuiteFailureReasons = append(r.SpecialSuiteFailureReasons, fmt.Sprintf("worker %d: %s", w.n, reason))
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
