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

// TestFilteredRunCountsAgree: in a filtered run (a rerun of the failed
// checks) the checks the filter left out are counted the same as skipped
// and as not run, INFO probes and effect checks included; the console says
// both numbers alike.
func TestFilteredRunCountsAgree(t *testing.T) {
	r := types.Report{SuiteConfig: types.SuiteConfig{FocusStrings: []string{"F.1"}}, SpecReports: types.SpecReports{
		spec("[F.1] reran", types.SpecStatePassed, "level:MUST", "section:2.3", "format:json"),
		spec("[F.2] left out", types.SpecStateSkipped, "level:MUST", "section:2.3", "format:json"),
		spec("[F.3] left out", types.SpecStateSkipped, "level:SHOULD", "section:2.3", "format:xml"),
		spec("[F.4] probe left out", types.SpecStateSkipped, "level:INFO", "section:2.3", "format:xml"),
		spec("[F.5] effect left out", types.SpecStateSkipped, "level:SHOULD", "section:3", "format:json", "effect"),
	}}
	d, err := report.WriteAll(t.TempDir(), r, "x", report.WriteOptions{Checks: fixtureCatalog(), Filters: []string{"--rerun-failed r.json"}})
	if err != nil {
		t.Fatal(err)
	}
	_, skipped := report.SkipReasons(d)
	notRun := -1
	for _, g := range d.NotCovered {
		if g.What == "filter" {
			notRun = g.Checks
		}
	}
	if skipped != 4 || notRun != skipped {
		t.Errorf("%d checks skipped, %d not run by the filter: want 4 each", skipped, notRun)
	}
	var b bytes.Buffer
	report.WriteConsole(&b, d, report.ConsoleOptions{Filters: []string{"--rerun-failed r.json"}})
	if !strings.Contains(b.String(), "Skipped: 4 checks") || !strings.Contains(b.String(), "(4 checks not run)") {
		t.Errorf("the console does not say 4 skipped and 4 not run alike:\n%s", b.String())
	}
}

// TestObserverNamedEverywhere: the observer the run used, or "none", is on
// the console, in report.json and in report.html.
func TestObserverNamedEverywhere(t *testing.T) {
	r := types.Report{SpecReports: types.SpecReports{spec("[O.1] passes", types.SpecStatePassed, "level:MUST", "section:2.3")}}
	for _, c := range []struct{ observer, effects, console, page string }{
		{"http://127.0.0.1:9090", "", "  observer: http://127.0.0.1:9090\n", "<code>http://127.0.0.1:9090</code>"},
		{"", "effects not observed: --no-observer", "  observer: none (effects not observed: --no-observer)\n", ">none (effects not observed: --no-observer)<"},
	} {
		dir := t.TempDir()
		d, err := report.WriteAll(dir, r, "x", report.WriteOptions{Checks: fixtureCatalog(), Observer: c.observer, Effects: c.effects})
		if err != nil {
			t.Fatal(err)
		}
		want := c.observer
		if want == "" {
			want = report.ObserverNone
		}
		var b bytes.Buffer
		report.WriteSummary(&b, d)
		js, _ := os.ReadFile(filepath.Join(dir, report.JSONFile))
		page, _ := os.ReadFile(filepath.Join(dir, report.HTMLFile))
		if !strings.Contains(b.String(), c.console) || !strings.Contains(string(js), `"observer": "`+want+`"`) || !strings.Contains(string(page), c.page) {
			t.Errorf("observer %q: console\n%s\nreport.json has %q: %v; report.html has %q: %v", want, b.String(),
				`"observer": "`+want+`"`, strings.Contains(string(js), `"observer": "`+want+`"`), c.page, strings.Contains(string(page), c.page))
		}
	}
}
