package bench

import (
	"strings"
	"testing"
)

// TestSuiteSummaryKeepsTheCounts: of gwconform's output, the summary
// keeps the lines that count a level's checks, not the failures, which
// start with their level too.
func TestSuiteSummaryKeepsTheCounts(t *testing.T) {
	out := "FAILED MUST   [effect.message.stored.json]\n" +
		"  MUST   [message.message_value.drawn.json]: a valid request was not accepted: HTTP 503\n" +
		"  SHOULD [message.envelope.sign.upper-case.xml]: the request was not accepted: HTTP 503\n" +
		"  MUST   1514 checks: 863 passed, 22 failed, 296 skipped\n" +
		"  SHOULD 2453 checks: 1405 passed, 64 failed\n" +
		"  INFO     70 checks: 0 ran, 70 skipped\n"
	want := "MUST   1514 checks: 863 passed, 22 failed, 296 skipped; SHOULD 2453 checks: 1405 passed, 64 failed; INFO     70 checks: 0 ran, 70 skipped"
	if got := suiteSummary(out); got != want {
		t.Errorf("suiteSummary:\n%q\nwant\n%q", got, want)
	}
	r := &Report{Suite: SuiteRun{ReportBytes: 1_090_000}, ReportSizes: []ReportSize{{Name: "x", Total: 2_600_000}}}
	if g, ok := r.reportSizeGoal(); !ok || g.Met || g.Miss != "0.10 MB over" {
		t.Errorf("report size goal over 2.5 MB: %+v", g)
	}
	r.ReportSizes[0].Total = 1_690_000
	if g, ok := r.reportSizeGoal(); !ok || !g.Met {
		t.Errorf("report size goal under 2.5 MB: %+v", g)
	}
}

// TestMissWhySaysWhatTheRoundsShow: a miss whose every round is below the
// goal is the cost, not the noise; one with rounds on both sides is the
// noise's.
func TestMissWhySaysWhatTheRoundsShow(t *testing.T) {
	if got := missWhy([]float64{0.84, 0.87, 0.95 - 1e-9}, 0.95, 14); !strings.Contains(got, "all 3 rounds read below 0.95") || !strings.Contains(got, "+14%") {
		t.Errorf("every round below: %q", got)
	}
	if got := missWhy([]float64{0.73, 0.89, 1.04}, 0.95, 9); !strings.Contains(got, "2 of 3 rounds read below 0.95 × and 1 over") ||
		!strings.Contains(got, "the miss within one error") {
		t.Errorf("rounds on both sides: %q", got)
	}
	tight := []float64{0.88, 0.89, 0.90, 0.91, 0.92, 0.90, 0.89, 0.91, 0.96, 0.90, 0.88, 0.92}
	if got := missWhy(tight, 0.95, 5); !strings.Contains(got, "11 of 12 rounds") || !strings.Contains(got, "the miss beyond two errors") {
		t.Errorf("a tight miss: %q", got)
	}
	edge := []float64{0.85, 0.88, 0.89, 0.90, 0.905, 0.91, 0.92, 0.925, 0.935, 0.94, 0.95, 0.955, 0.96, 0.97, 1.0, 1.05}
	if got := missWhy(edge, 0.95, 5); !strings.Contains(got, "between one error and two") {
		t.Errorf("a miss of a little more than its error: %q (error %.3f)", got, medianError(edge))
	}
}
