package engine

import (
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/report"
)

// TestProgressCountsAsTheSummary: the progress line counts the failures
// the summary and the reports count: a failure the baseline excuses is a
// known failure, not a failed check, and an INFO probe that could not
// complete is no failure.
func TestProgressCountsAsTheSummary(t *testing.T) {
	var declared []check.Meta
	meta := func(id string, level check.Level) check.Meta {
		m := check.Meta{ID: id, Level: level, Section: "2.3", Title: id, Assertion: id + " holds."}
		declared = append(declared, m)
		return m
	}
	at := func(m check.Meta, state types.SpecState) types.SpecReport {
		return types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: m.Text(), LeafNodeLabels: m.Labels(), State: state, RunTime: time.Millisecond}
	}
	specs := types.SpecReports{
		at(meta("progress-test.must.known", check.Must), types.SpecStateFailed),
		at(meta("progress-test.should.known", check.Should), types.SpecStateFailed),
		at(meta("progress-test.must.failed", check.Must), types.SpecStateFailed),
		at(meta("progress-test.should.failed", check.Should), types.SpecStateFailed),
		at(meta("progress-test.info.incomplete", check.Info), types.SpecStateFailed),
		at(meta("progress-test.must.passed", check.Must), types.SpecStatePassed),
		at(meta("progress-test.should.panicked", check.Should), types.SpecStatePanicked),
		at(meta("progress-test.must.interrupted", check.Must), types.SpecStateInterrupted),
	}
	today := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	bl, err := report.ParseBaselineOn([]byte("entries:\n  - {check: 'progress-test.*.known', reason: known, owner: us, expires: 2026-12-31}\n"), today)
	if err != nil {
		t.Fatal(err)
	}
	cat := check.NewCatalog(declared)
	p := &progressLine{start: today, catalog: cat}
	p.total.Store(int64(len(specs)))
	for _, sr := range specs {
		p.done.Add(1)
		p.count(sr, bl)
	}
	d, err := report.WriteAll(t.TempDir(), types.Report{SpecReports: specs}, "x", report.WriteOptions{Checks: cat, Baseline: bl, Today: today})
	if err != nil {
		t.Fatal(err)
	}
	// Counted as the summary's levels count them (FailedAt, the verdict's
	// count, takes an interrupted check too).
	failed := d.Summary.ByLevel[string(check.Must)].Failed + d.Summary.ByLevel[string(check.Should)].Failed
	if p.failed.Load() != int64(failed) || p.known.Load() != int64(d.KnownFailures) || failed != 3 || d.KnownFailures != 2 {
		t.Errorf("progress: %d failed, %d known; the summary: %d failed, %d known (want 3 and 2)", p.failed.Load(), p.known.Load(), failed, d.KnownFailures)
	}
	// An interrupted check is "interrupted" in both, never "failed".
	if p.interrupted.Load() != int64(d.Summary.Interrupted) || d.Summary.Interrupted != 1 {
		t.Errorf("progress: %d interrupted; the summary: %d (want 1)", p.interrupted.Load(), d.Summary.Interrupted)
	}
	if got, want := p.Text(today.Add(time.Second)), "gwconform: 8/8 checks done, 3 failed, 1 interrupted, 2 known failures, 0:01"; got != want {
		t.Errorf("progress %q, want %q", got, want)
	}
}
