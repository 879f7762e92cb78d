package bench

import (
	"context"
	"fmt"
	"strings"
)

// SectionDiff measures gwconform diff's speed against two embedded
// simulators.
const SectionDiff = "gwconform diff against two embedded simulators"

// goalDiffOpsPerSec is the goal of compared operations a second.
const goalDiffOpsPerSec = 2000.0

// DiffFigures are the diff section's figures (Report.Extra[SectionDiff]).
type DiffFigures struct {
	// Cmd is the go test command; OpsPerSec and PerCPU its metrics by
	// benchmark name (one value a run).
	Cmd       string               `json:"command"`
	OpsPerSec map[string][]float64 `json:"operations_per_second"`
	PerCPU    map[string][]float64 `json:"operations_per_cpu_second"`
}

func diffSection() Section {
	return Section{Name: SectionDiff, Measure: func(ctx context.Context, o Options, r *Report, logf func(string, ...any)) error {
		args := []string{goProgram(), "test", "-run", "^$", "-bench", "^BenchmarkDiffSimulators$", "-benchtime", "20000x", "-count", "3", "./conformance/diff/"}
		fig := &DiffFigures{Cmd: strings.Join(shortArgv(args), " ")}
		r.Extra[SectionDiff] = fig
		logf("diff: %s", fig.Cmd)
		out, err := output(ctx, o.Dir, args...)
		if err != nil {
			return err
		}
		fig.OpsPerSec, fig.PerCPU = benchMetric(out, "ops/s"), benchMetric(out, "ops/cpu-s")
		return nil
	}, Goals: (*Report).diffGoals, Write: (*Report).writeDiff}
}

func (r *Report) diffGoals() []Goal {
	fig, ok := r.Extra[SectionDiff].(*DiffFigures)
	if !ok {
		return nil
	}
	var goals []Goal
	for _, name := range sortedNames(fig.OpsPerSec) {
		v := medianOf(fig.OpsPerSec[name])
		g := Goal{Name: fmt.Sprintf("gwconform diff against two embedded simulators, compared operations/s (%s)", strings.TrimPrefix(name, "BenchmarkDiffSimulators/")),
			Target: "≥ 2,000/s", Known: v > 0, Met: v >= goalDiffOpsPerSec,
			Measured: fmt.Sprintf("%s/s (median of %s); %s per CPU-second", num(v), joinFloats(fig.OpsPerSec[name], "%.0f"), num(medianOf(fig.PerCPU[name])))}
		if !g.Met {
			g.Miss = fmt.Sprintf("%s/s", num(v))
			g.Why = "each compared operation is its request to both sides and, after one either side accepted, an observer read of what it touched on both (about 1.6 HTTP exchanges a side), on loopback, on two cores shared by diff, both simulators and other processes; the per-CPU-second figure says how much of the miss is the machine's load"
		}
		goals = append(goals, g)
	}
	return goals
}

func (r *Report) writeDiff(p func(string, ...any)) {
	fig, ok := r.Extra[SectionDiff].(*DiffFigures)
	if !ok || len(fig.OpsPerSec) == 0 {
		return
	}
	p("## gwconform diff against two embedded simulators\n\n")
	p("`BenchmarkDiffSimulators` ([diff.md](diff.md)): two copies of gwsim in the test's own process, 20,000 operations compared, sequentially and with 4 clients, 3 runs. " +
		"A compared operation is the request sent to both sides, the answers compared, and the observer reads of what it touched on both sides; resets included. " +
		"The sequential figure is one client on each side, a step's reads going out with the next step's request; the other, 4 clients on each side. " +
		"Operations per CPU-second count the CPU of the whole process (diff and both simulators).\n\n")
	p("| benchmark | compared operations/s | per CPU-second |\n|---|---:|---:|\n")
	for _, name := range sortedNames(fig.OpsPerSec) {
		p("| %s | %s (%s) | %s |\n", strings.TrimPrefix(name, "BenchmarkDiffSimulators/"), num(medianOf(fig.OpsPerSec[name])),
			joinFloats(fig.OpsPerSec[name], "%.0f"), num(medianOf(fig.PerCPU[name])))
	}
	p("\n```sh\n%s\n```\n\n", fig.Cmd)
}
