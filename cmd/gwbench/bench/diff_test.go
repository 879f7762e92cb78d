package bench

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// The diff section reports both benchmarks, the sequential one and the
// one with 4 clients: each in its own goal row (met or missed against
// 2,000/s) and in the section's table.
func TestDiffSectionReportsSequentialAndClients(t *testing.T) {
	out := `pkg: github.com/gwdmi/gwtools/conformance/diff
BenchmarkDiffSimulators/sequential-2         	   20000	    421171 ns/op	      2515 ops/cpu-s	      2374 ops/s
BenchmarkDiffSimulators/sequential-2         	   20000	    441171 ns/op	      2415 ops/cpu-s	      1900 ops/s
BenchmarkDiffSimulators/sequential-2         	   20000	    401171 ns/op	      2615 ops/cpu-s	      2500 ops/s
BenchmarkDiffSimulators/clients=4-2          	   20000	    312740 ns/op	      4616 ops/cpu-s	      3198 ops/s
`
	r := &Report{Extra: map[string]any{}}
	fig := &DiffFigures{Cmd: "go test -bench BenchmarkDiffSimulators ./conformance/diff/"}
	fig.OpsPerSec, fig.PerCPU = benchMetric(out, "ops/s"), benchMetric(out, "ops/cpu-s")
	r.Extra[SectionDiff] = fig
	if got := fig.OpsPerSec["BenchmarkDiffSimulators/sequential"]; len(got) != 3 || got[0] != 2374 {
		t.Fatalf("sequential ops/s: %v (ops/cpu-s must not be read as ops/s)", got)
	}
	goals := r.diffGoals()
	var names []string
	for _, g := range goals {
		names = append(names, g.Name)
		if strings.Contains(g.Name, "(sequential)") && (!g.Met || !strings.Contains(g.Measured, "2,374/s (median of 2374, 1900, 2500)")) {
			t.Errorf("sequential goal: met %v, %q", g.Met, g.Measured)
		}
	}
	if len(goals) != 2 || !strings.Contains(strings.Join(names, "\n"), "(sequential)") || !strings.Contains(strings.Join(names, "\n"), "(clients=4)") {
		t.Errorf("goals: %q", names)
	}
	var b bytes.Buffer
	r.writeDiff(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) })
	for _, want := range []string{"| sequential | 2,374 (2374, 1900, 2500) | 2,515 |", "| clients=4 | 3,198 (3198) | 4,616 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the section lacks %q:\n%s", want, b.String())
		}
	}
}
