package bench

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// SectionControl runs the on/off comparison of the client report and the
// metrics with nothing switched off: two gwsim processes with the same
// (default) flags, in the same rounds. Its ratios are what the method
// reads when there is no difference to find, in this run, on this
// machine: the resolution that the client report's and the metrics'
// figures are to be read against.
const SectionControl = "the client report's comparison as its own control: default flags against default flags"

func controlSection() Section {
	return onOffSection(SectionControl, "", "control", reportRounds, (*Report).controlGoals, (*Report).writeControl)
}

func (r *Report) controlGoals() []Goal {
	fig, ok := r.onOffFigures(SectionControl)
	if !ok {
		return nil
	}
	var goals []Goal
	for _, run := range fig.Runs {
		goals = append(goals, Goal{Name: fmt.Sprintf("control: gwsim against the same gwsim (default flags both), requests/s (gwconform load, %d connections, same run)", run.Connections),
			Target: "1.00 × but for noise", Known: len(run.Ratios) > 0, Info: true,
			Measured: fmt.Sprintf("%.2f × (median of %d rounds, its error ±%.2f; each %s; spread middle half %s)",
				medianOf(run.Ratios), len(run.Ratios), medianError(run.Ratios), joinFloats(run.Ratios, "%.2f"), middleHalf(run.Ratios))})
	}
	return goals
}

// middleHalf is the middle half of ratios (from quartile to quartile),
// as "a–b".
func middleHalf(ratios []float64) string {
	q1, q3 := quartiles(ratios)
	return fmt.Sprintf("%.2f–%.2f", q1, q3)
}

// medianError is the standard error of the median of ratios: 1.2533
// σ/√n, as for a normal sample, with σ read from the middle half
// (IQR/1.349), so that a round the host spoiled does not widen it.
func medianError(ratios []float64) float64 {
	if len(ratios) < 2 {
		return 0
	}
	q1, q3 := quartiles(ratios)
	return 1.2533 * (q3 - q1) / 1.349 / math.Sqrt(float64(len(ratios)))
}

// quartiles are the medians of v's lower and upper halves (Tukey's
// hinges; the middle value, when v is odd, in neither).
func quartiles(v []float64) (q1, q3 float64) {
	if len(v) == 0 {
		return 0, 0
	}
	w := append([]float64(nil), v...)
	sort.Float64s(w)
	return medianOf(w[:len(w)/2]), medianOf(w[(len(w)+1)/2:])
}

func (r *Report) writeControl(p func(string, ...any)) {
	fig, ok := r.onOffFigures(SectionControl)
	if !ok {
		return
	}
	p("## The comparison's own control\n\n")
	p("The client report's and the metrics' costs above are each the ratio of two gwsim processes' requests/s, one switched off. "+
		"Here the same method runs with nothing switched off: two gwsim processes with the same default flags, %s a run, in %d rounds that "+
		"alternate which goes first, each round starting both afresh. Whatever these ratios read other than 1.00 is the method's own error in this run, "+
		"on this machine: a cost within it cannot be told from noise.\n\n", secs(fig.Duration), fig.Rounds)
	p("| connections | first gwsim, requests/s (median) | second gwsim | first / second (median of the rounds' ratios) | the median's error | middle half of the rounds | each round's ratio | errors |\n|---:|---:|---:|---:|---:|---|---|---|\n")
	for _, run := range fig.Runs {
		p("| %d | %s | %s | **%.2f ×** | ±%.2f | %s | %s | %d / %d |\n", run.Connections, num(medianOf(run.On)), num(medianOf(run.Off)), medianOf(run.Ratios),
			medianError(run.Ratios), middleHalf(run.Ratios), joinFloats(run.Ratios, "%.2f"), run.OnErrors, run.OffErrors)
	}
	p("\n```sh\n%s\n%s\n```\n\n", r.BenchFleet, strings.Join(fig.Commands, "\n"))
}
