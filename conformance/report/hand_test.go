package report_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/report"
)

// These tests build Ginkgo reports by hand; their IDs are not in the check
// registry, so metadata comes from the labels check.Meta.Labels gives.

// spec is a check's spec report with text "[ID] title": the ID goes into
// its labels, as check.Meta.Labels puts it, unless the text has none.
func spec(text string, state types.SpecState, labels ...string) types.SpecReport {
	if strings.HasPrefix(text, "[") {
		if id, _, ok := strings.Cut(text[1:], "]"); ok {
			labels = append([]string{check.IDLabel + id}, labels...)
		}
	}
	return types.SpecReport{
		LeafNodeType:   types.NodeTypeIt,
		LeafNodeText:   text,
		LeafNodeLabels: labels,
		State:          state,
		RunTime:        time.Millisecond,
	}
}

func TestOutcomes(t *testing.T) {
	must := []string{"level:MUST", "section:2.3"}
	r := types.Report{
		SuiteConfig: types.SuiteConfig{RandomSeed: 7},
		StartTime:   time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		EndTime:     time.Date(2026, 1, 2, 3, 4, 7, 0, time.UTC),
		SpecReports: types.SpecReports{
			spec("[H.1] timed out", types.SpecStateTimedout, must...),
			spec("[H.2] aborted", types.SpecStateAborted, must...),
			spec("[H.3] interrupted", types.SpecStateInterrupted, must...),
			spec("[H.4] pending", types.SpecStatePending, must...),
			spec("[H.5] never ran", types.SpecStateInvalid, must...),
			spec("[H.6] info that broke", types.SpecStateFailed, "level:INFO", "section:4.4"),
			spec("[NOLEVEL] bracketed but not a check", types.SpecStatePassed),
			{LeafNodeType: types.NodeTypeBeforeSuite, State: types.SpecStatePassed},
			{LeafNodeType: types.NodeTypeAfterSuite, State: types.SpecStateFailed, Failure: types.Failure{Message: "cleanup failed"}},
		},
	}
	d := report.Build(r, "", fixtureCatalog())
	for id, w := range map[string][2]string{
		"H.1": {"failed", "timedout"},
		// Aborted: the run stopped itself; what it did not reach is not
		// judged, so the verdict is INCOMPLETE rather than FAIL.
		"H.2": {"interrupted", "aborted"},
		"H.3": {"interrupted", "interrupted"},
		"H.4": {"pending", "pending"},
		"H.5": {"skipped", "INVALID SPEC STATE"},
		"H.6": {"failed", "failed"},
	} {
		res, ok := d.Result(id)
		if !ok || res.Outcome != w[0] || res.State != w[1] {
			t.Errorf("%s: %+v", id, res)
		}
	}
	if len(d.Results) != 8 {
		t.Errorf("%d results; the passed BeforeSuite should be left out", len(d.Results))
	}
	plain := d.Results[len(d.Results)-2:]
	if plain[0].Level != "" || plain[0].Text != "[NOLEVEL] bracketed but not a check" || plain[1].Node != "AfterSuite" || !strings.Contains(plain[1].Failure, "cleanup failed") {
		t.Errorf("plain results %+v", plain)
	}
	// Interrupted counts as failed for exit codes; INFO never does.
	if d.FailedAt("MUST") != 3 || d.FailedAt("INFO") != 0 || d.FailedAt("SHOULD") != 0 {
		t.Errorf("FailedAt MUST %d INFO %d", d.FailedAt("MUST"), d.FailedAt("INFO"))
	}
	if !slices.Equal(d.Summary.FailedChecks, []string{"H.1", "H.2", "H.3"}) {
		t.Errorf("FailedChecks %v", d.Summary.FailedChecks)
	}
	if d.Verdict != report.VerdictFail || d.DurationMS != 2000 || d.Seed != 7 {
		t.Errorf("verdict %s duration %v seed %d", d.Verdict, d.DurationMS, d.Seed)
	}
	var b bytes.Buffer
	if err := report.RenderHTML(&b, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "could not complete") || !strings.Contains(b.String(), "cleanup failed") {
		t.Errorf("page lacks the broken INFO check or the AfterSuite failure")
	}
}

func TestVerdict(t *testing.T) {
	pass := spec("[V.1] passes", types.SpecStatePassed, "level:MUST", "section:9")
	should := spec("[V.2] fails", types.SpecStateFailed, "level:SHOULD", "section:2.1")
	skip := spec("[V.3] skipped", types.SpecStateSkipped, "level:MUST", "section:9")
	setup := types.SpecReport{LeafNodeType: types.NodeTypeBeforeSuite, State: types.SpecStateFailed}
	intr := spec("[V.4] interrupted", types.SpecStateInterrupted, "level:INFO", "section:4")
	for _, c := range []struct {
		name  string
		specs types.SpecReports
		want  string
	}{
		{"a SHOULD failure does not fail", types.SpecReports{pass, should}, report.VerdictPass},
		{"no MUST check ran", types.SpecReports{skip, should}, report.VerdictPartial},
		{"nothing at all", nil, report.VerdictPartial},
		{"suite setup failed", types.SpecReports{setup, pass, skip}, report.VerdictIncomplete},
		{"interrupted", types.SpecReports{pass, intr}, report.VerdictIncomplete},
	} {
		d := report.Build(types.Report{SpecReports: c.specs}, "x", fixtureCatalog())
		if d.Verdict != c.want {
			t.Errorf("%s: verdict %s, want %s", c.name, d.Verdict, c.want)
		}
	}
}

func TestMetaFromLabels(t *testing.T) {
	d := report.Build(types.Report{SpecReports: types.SpecReports{
		spec("[Z.1] dimming in XML", types.SpecStatePassed,
			"level:SHOULD", "section:2.3", "op:send command", "format:xml", "type:light-dimmer", "edge"),
	}}, "", check.Catalog{})
	r := d.Results[0]
	if r.ID != "Z.1" || r.Level != "SHOULD" || r.Section != "2.3" || r.Title != "dimming in XML" ||
		r.Operation != "send command" || r.Format != "xml" || r.DeviceType != "Light Dimmer" || !slices.Equal(r.Tags, []string{"edge"}) {
		t.Errorf("%+v", r)
	}
	if c := d.Grid[5].Cells[1]; c.Passed != 1 {
		t.Errorf("grid cell %+v", c)
	}
}

func TestSummaryTruncates(t *testing.T) {
	var specs types.SpecReports
	for i := 1; i <= 25; i++ {
		specs = append(specs, spec(fmt.Sprintf("[T.%d] check %d", i, i), types.SpecStateFailed, "level:MUST", "section:2.3"))
	}
	d := report.Build(types.Report{SpecReports: specs}, "http://t", fixtureCatalog())
	var b bytes.Buffer
	report.WriteSummary(&b, d)
	out := b.String()
	// Twenty blocks, then a line each: every failure once.
	if strings.Count(out, "FAILED") != 20 || !strings.Contains(out, "FAILED MUST   [T.20]\n  title:    check 20\n") ||
		strings.Count(out, "[T.21]") != 1 || !strings.Contains(out, "5 more failed:\n  MUST   [T.21]: ") {
		t.Errorf("summary:\n%s", out)
	}
	if strings.Contains(out, "Reports:") {
		t.Errorf("summary names report files that were not written:\n%s", out)
	}
}

func TestSections(t *testing.T) {
	var numbers []string
	for _, s := range check.Sections {
		numbers = append(numbers, s.Number)
		if s.Title == "" || check.SectionTitle(s.Number) != s.Title {
			t.Errorf("section %s: %+v", s.Number, s)
		}
		if (s.Gap != "") != slices.Contains([]string{"1", "3", "6", "7", "8"}, s.Number) {
			t.Errorf("section %s gap %q", s.Number, s.Gap)
		}
	}
	want := []string{"1", "2", "2.1", "2.2", "2.3", "2.4", "2.5", "3", "4", "4.1", "4.2", "4.3", "4.4", "5", "6", "7", "8", "9"}
	if !slices.Equal(numbers, want) {
		t.Errorf("sections %v", numbers)
	}
	if check.SectionTitle("2.3") != "Device types and their command fields (send command)" || check.SectionTitle("10") != "" {
		t.Errorf("SectionTitle")
	}
}
