package bench

import "testing"

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
	r := &Report{Suite: SuiteRun{ReportBytes: 1_090_000}, ReportSizes: []ReportSize{{Name: "x", Total: 2_100_000}}}
	if g, ok := r.reportSizeGoal(); !ok || g.Met || g.Miss != "0.10 MB over" {
		t.Errorf("report size goal over 2 MB: %+v", g)
	}
	r.ReportSizes[0].Total = 1_690_000
	if g, ok := r.reportSizeGoal(); !ok || !g.Met {
		t.Errorf("report size goal under 2 MB: %+v", g)
	}
}
