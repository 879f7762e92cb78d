package bench

import (
	"fmt"
	"strings"
)

// SectionMetrics measures what the Prometheus metrics (GET /metrics, on
// by default) cost a request: gwsim with its default flags against gwsim
// with --metrics=false, in the same rounds.
const SectionMetrics = "the metrics' cost: default flags against --metrics=false"

func metricsSection() Section {
	return onOffSection(SectionMetrics, "--metrics=false", "metrics", onOffRounds, (*Report).metricsGoals, (*Report).writeMetrics)
}

func (r *Report) metricsGoals() []Goal {
	fig, ok := r.onOffFigures(SectionMetrics)
	if !ok {
		return nil
	}
	var goals []Goal
	for _, run := range fig.Runs {
		goals = append(goals, Goal{Name: fmt.Sprintf("gwsim with the metrics (default flags) against --metrics=false, requests/s (gwconform load, %d connections, same run)", run.Connections),
			Target: "within noise", Known: len(run.Ratios) > 0, Info: true,
			Measured: fmt.Sprintf("%.2f × (median of %d rounds; each %s; medians %s vs %s req/s); gwsim CPU per request %s vs %s (%+.0f%%)",
				medianOf(run.Ratios), len(run.Ratios), joinFloats(run.Ratios, "%.2f"), num(medianOf(run.On)), num(medianOf(run.Off)),
				dur(medianDuration(run.OnCPU)), dur(medianDuration(run.OffCPU)), cpuExtra(run))})
	}
	return goals
}

func (r *Report) writeMetrics(p func(string, ...any)) {
	fig, ok := r.onOffFigures(SectionMetrics)
	if !ok {
		return
	}
	p("## The metrics' cost\n\n")
	p("The Prometheus metrics (`GET /metrics`, [usage.md](usage.md#metrics)) are on by default: each request adds to a counter and a histogram "+
		"whose label sets are resolved once, then kept in fixed arrays (no label string built, no map looked up). "+
		"Two gwsim processes serve the bench fleet at once, one with the default flags and one with `--metrics=false`; gwconform load sends them the default mix, "+
		"%s a run, in %d rounds that alternate which goes first, at each concurrency. The goal is a ratio within the rounds' own spread. "+
		"The Go benchmark `BenchmarkRequestMetrics` (simulator/internal/metrics) gives the cost of one request's counting alone.\n\n", secs(fig.Duration), fig.Rounds)
	p("| connections | default flags, requests/s (median) | `--metrics=false` | default / off (median of the rounds' ratios) | each round's ratio | gwsim CPU per request, default / off (median) | errors |\n|---:|---:|---:|---:|---|---|---|\n")
	for _, run := range fig.Runs {
		p("| %d | %s | %s | **%.2f ×** | %s | %s / %s | %d / %d |\n", run.Connections, num(medianOf(run.On)), num(medianOf(run.Off)), medianOf(run.Ratios),
			joinFloats(run.Ratios, "%.2f"), dur(medianDuration(run.OnCPU)), dur(medianDuration(run.OffCPU)), run.OnErrors, run.OffErrors)
	}
	p("\n```sh\n%s\n%s\n```\n\n", r.BenchFleet, strings.Join(fig.Commands, "\n"))
}
