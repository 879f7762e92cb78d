package bench

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
)

// The control's quartiles are Tukey's hinges: the medians of the lower
// and upper halves, the middle value of an odd count in neither.
func TestQuartiles(t *testing.T) {
	for _, c := range []struct {
		in     []float64
		q1, q3 float64
	}{
		{[]float64{5, 1, 3, 2, 4}, 1.5, 4.5},
		{[]float64{4, 1, 3, 2}, 1.5, 3.5},
		{[]float64{0.9, 1.1, 1.0, 0.8, 1.2, 1.05, 0.95}, 0.9, 1.1},
		{nil, 0, 0},
	} {
		if q1, q3 := quartiles(c.in); q1 != c.q1 || q3 != c.q3 {
			t.Errorf("quartiles(%v) = %v, %v; want %v, %v", c.in, q1, q3, c.q1, c.q3)
		}
	}
}

// A median's error is 1.2533 σ/√n with σ from the middle half: four
// times the rounds, alike, halve it; a round far out does not widen it.
func TestMedianError(t *testing.T) {
	if e := medianError([]float64{1}); e != 0 {
		t.Errorf("one round: %v, want 0", e)
	}
	if e := medianError([]float64{1, 2, 3, 4}); math.Abs(e-1.2533*2/1.349/2) > 1e-9 {
		t.Errorf("1..4: %v", e)
	}
	v := []float64{0.88, 0.95, 1.02, 0.91, 1.07, 0.99, 1.12, 0.93, 1.04, 0.97, 1.01, 0.9, 1.08, 0.96, 1.0}
	four := append(append(append(append([]float64(nil), v...), v...), v...), v...)
	if a, b := medianError(v), medianError(four); math.Abs(b/a-0.5) > 0.1 {
		t.Errorf("15 rounds ±%.3f, the same four times ±%.3f: not halved", a, b)
	}
	out := append(append([]float64(nil), v...), 0.3)
	if a, b := medianError(v), medianError(out); b > 1.2*a {
		t.Errorf("one round at 0.3 widened the error from ±%.3f to ±%.3f", a, b)
	}
}

// The control section reports the A/A rounds as information, not a goal
// met or missed, with the spread of its rounds, and its commands start
// the two gwsim processes with the same flags.
func TestControlSection(t *testing.T) {
	r := &Report{Extra: map[string]any{}, BenchFleet: "bin/gwsim fleet --out bench-fleet.yaml"}
	fig := &ClientReportFigures{Rounds: 5, Duration: 2e9, Commands: []string{
		"GODEBUG=gctrace=1 bin/gwsim serve --fleet bench-fleet.yaml &   # default flags; prints GWSIM_URL",
		"GODEBUG=gctrace=1 bin/gwsim serve --fleet bench-fleet.yaml &   # the same again (the control); prints OFF_URL",
	}}
	fig.Runs = []ClientReportRun{{Connections: 4, On: []float64{100, 110, 90, 100, 105}, Off: []float64{100, 100, 100, 100, 100},
		Ratios: []float64{1.0, 1.1, 0.9, 1.0, 1.05}}}
	r.Extra[SectionControl] = fig
	goals := r.controlGoals()
	if len(goals) != 1 || !goals[0].Info || !strings.Contains(goals[0].Measured, "1.00 × (median of 5 rounds, its error ±0.05") ||
		!strings.Contains(goals[0].Measured, "middle half 0.95–1.08") {
		t.Errorf("goals: %+v", goals)
	}
	var b bytes.Buffer
	r.writeControl(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) })
	for _, want := range []string{"## The comparison's own control", "| 4 | 100 | 100 | **1.00 ×** | ±0.05 | 0.95–1.08 | 1.00, 1.10, 0.90, 1.00, 1.05 | 0 / 0 |",
		"bench-fleet.yaml &   # the same again"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the section lacks %q:\n%s", want, b.String())
		}
	}
}

// A miss is written with the decimals that show it: a median of 0.947
// against 0.95 is not "0.95 × instead of 0.95 ×".
func TestShortOfShowsTheMiss(t *testing.T) {
	for _, c := range []struct {
		ratio, target float64
		want          string
	}{
		{0.947, 0.95, "0.3% short: 0.947 × instead of 0.95 ×"},
		{0.25, 0.70, "64% short: 0.25 × instead of 0.70 ×"},
		{0.93, 0.95, "2% short: 0.93 × instead of 0.95 ×"},
	} {
		if got := shortOf(c.ratio, c.target); got != c.want {
			t.Errorf("shortOf(%v, %v) = %q, want %q", c.ratio, c.target, got, c.want)
		}
	}
	if got := ratioText(0.953, 0.95); got != "0.95" {
		t.Errorf("a met ratio: %q", got)
	}
}
