package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/report"
)

// TestInconclusiveIsCountedApart: a refusal check skipped because its
// control was refused is inconclusive, neither passed nor skipped, in every
// report; a MUST one makes the run INCOMPLETE, never PASS; and the run's
// "effects not observed" line is in each report.
func TestInconclusiveIsCountedApart(t *testing.T) {
	pass := spec("[I.1] passes", types.SpecStatePassed, "level:MUST", "section:9")
	inc := spec("[I.2] refused, but so was its control", types.SpecStateSkipped, "level:MUST", "section:9")
	inc.Failure.Message = "inconclusive: the valid command in json was refused (HTTP 401, error bad_signature)"
	inc.ReportEntries = append(inc.ReportEntries, types.ReportEntry{Name: report.InconclusiveEntry, Value: types.WrapEntryValue(inc.Failure.Message)})
	skip := spec("[I.3] skipped", types.SpecStateSkipped, "level:SHOULD", "section:9")
	skip.Failure.Message = "the fleet has no Thermostat"
	r := types.Report{SpecReports: types.SpecReports{pass, inc, skip}}

	dir := t.TempDir()
	const effects = "effects not observed: --no-observer (the certificate records it)"
	d, err := report.WriteAll(dir, r, "x", report.WriteOptions{Checks: fixtureCatalog(), Effects: effects})
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := d.Result("I.2"); res.Outcome != report.Inconclusive {
		t.Errorf("I.2: %s", res.Outcome)
	}
	must := d.Summary.ByLevel["MUST"]
	if must.Inconclusive != 1 || must.Passed != 1 || must.Skipped != 0 || d.Summary.Inconclusive != 1 {
		t.Errorf("MUST counts %+v, all %+v", must, d.Summary.Counts)
	}
	if d.Verdict != report.VerdictIncomplete {
		t.Errorf("verdict %s, want INCOMPLETE", d.Verdict)
	}
	if re := report.Recount(d); re.Verdict != d.Verdict || re.Summary.Inconclusive != 1 {
		t.Errorf("recounted: %s, %d inconclusive", re.Verdict, re.Summary.Inconclusive)
	}
	var sum bytes.Buffer
	report.WriteSummary(&sum, d)
	if !strings.Contains(sum.String(), "1 inconclusive") || strings.Count(sum.String(), effects) != 1 {
		t.Errorf("summary:\n%s", sum.String())
	}
	for file, want := range map[string][]string{
		report.JSONFile:  {`"inconclusive": 1`, `"outcome":"inconclusive"`, effects},
		report.JUnitFile: {`name="gwconform.inconclusive" value="1"`, `name="check.outcome" value="inconclusive"`, effects},
		report.HTMLFile:  {"Inconclusive", effects},
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s lacks %q", file, w)
			}
		}
	}
}
