package report_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/report"
)

func skipped(text, reason string, labels ...string) types.SpecReport {
	s := spec(text, types.SpecStateSkipped, labels...)
	s.Failure.Message = reason
	return s
}

// TestPartialNamesWhatWasNotCovered: a run whose MUST checks all passed but
// that skipped a device type's checks, was filtered, or ran nothing is
// PARTIAL, never PASS, and says what was not covered; ExitCode makes it 1
// unless partial runs are allowed.
func TestPartialNamesWhatWasNotCovered(t *testing.T) {
	pass := spec("[P.1] dimmer passes", types.SpecStatePassed, "level:MUST", "section:2.3", "type:light-dimmer", "format:json", "op:command")
	thermo := skipped("[P.2] thermostat", "the fleet has no Thermostat on the tested gateway: not covered", "level:MUST", "section:2.3", "type:thermostat", "format:json", "op:command")
	sim := skipped("[P.3] sim", "the target has no gwsim admin API", "level:SHOULD", "section:3", "format:json", "sim")
	simToken := skipped("[P.4] sim", "the target's admin API answered 401: needs --admin-token", "level:SHOULD", "section:3", "format:json", "sim")
	filtered := spec("[P.5] xml", types.SpecStateSkipped, "level:MUST", "section:2.3", "format:xml")
	for _, c := range []struct {
		name   string
		r      types.Report
		want   string
		gapHas string
	}{
		{"complete", types.Report{SpecReports: types.SpecReports{pass, sim}}, report.VerdictPass, ""},
		{"merged from workers: skipped in one, ran in another", types.Report{SpecReports: types.SpecReports{pass,
			skipped("[P.1] dimmer passes", "this worker has no Light Dimmer", "level:MUST", "section:2.3", "type:light-dimmer", "format:json", "op:command")}}, report.VerdictPass, ""},
		{"a type not covered", types.Report{SpecReports: types.SpecReports{pass, thermo}}, report.VerdictPartial, "device type Thermostat"},
		{"admin API wants a token", types.Report{SpecReports: types.SpecReports{pass, simToken}}, report.VerdictPartial, "--admin-token"},
		{"focus", types.Report{SpecReports: types.SpecReports{pass, filtered}, SuiteConfig: types.SuiteConfig{FocusStrings: []string{"dimmer"}}}, report.VerdictPartial, "--ginkgo.focus=dimmer"},
		{"a format not covered", types.Report{SpecReports: types.SpecReports{pass, filtered}}, report.VerdictPartial, "format xml"},
		{"nothing ran", types.Report{SpecReports: types.SpecReports{filtered}, SuiteConfig: types.SuiteConfig{FocusStrings: []string{"nomatch"}}}, report.VerdictPartial, "no check ran"},
	} {
		d := report.Build(c.r, "x", fixtureCatalog())
		if d.Verdict != c.want {
			t.Errorf("%s: verdict %s, want %s (not covered %v)", c.name, d.Verdict, c.want, d.NotCovered)
			continue
		}
		var all []string
		for _, g := range d.NotCovered {
			all = append(all, g.String())
		}
		if c.gapHas != "" && !strings.Contains(strings.Join(all, "\n"), c.gapHas) {
			t.Errorf("%s: not covered %q does not name %q", c.name, all, c.gapHas)
		}
		code, allowed := report.ExitCode(d, "must", false), report.ExitCode(d, "must", true)
		if c.want == report.VerdictPartial && (code != 1 || allowed != 0) {
			t.Errorf("%s: exit %d, with --allow-partial %d; want 1 and 0", c.name, code, allowed)
		}
		if c.want == report.VerdictPass && code != 0 {
			t.Errorf("%s: exit %d", c.name, code)
		}
		if c.want == report.VerdictPartial {
			var b bytes.Buffer
			report.WriteSummary(&b, d)
			if !strings.Contains(b.String(), "PARTIAL") || !strings.Contains(b.String(), "Not covered:") || !strings.Contains(b.String(), c.gapHas) {
				t.Errorf("%s: summary does not say what was not covered:\n%s", c.name, b.String())
			}
			b.Reset()
			report.RenderHTML(&b, d)
			if !strings.Contains(b.String(), "Not covered") || !strings.Contains(b.String(), "PARTIAL") {
				t.Errorf("%s: the HTML report does not say what was not covered", c.name)
			}
		}
	}
}

// TestJUnitAgreesWithTheExitCode: a failed SHOULD check makes the JUnit
// report fail, and the verdict FAIL, only with --fail-on should; otherwise it is a skipped test
// case whose message says it failed, and the suite carries the verdict and
// what was not covered as properties.
func TestJUnitAgreesWithTheExitCode(t *testing.T) {
	pass := spec("[J.1] passes", types.SpecStatePassed, "level:MUST", "section:2.3", "format:json")
	should := spec("[J.2] should", types.SpecStateFailed, "level:SHOULD", "section:2.3", "format:json")
	should.Failure.Message = "status 422, want 400"
	thermo := skipped("[J.3] thermostat", "the fleet has no Thermostat", "level:MUST", "section:2.3", "type:thermostat", "format:json")
	r := types.Report{SuiteDescription: "gwconform", SpecReports: types.SpecReports{pass, should, thermo}}
	for _, o := range []report.WriteOptions{{}, {FailOnShould: true}, {AllowPartial: true}, {FailOnShould: true, AllowPartial: true}} {
		failOnShould := o.FailOnShould
		dir := t.TempDir()
		d, err := report.WriteAll(dir, r, "x", o)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "junit.xml"))
		var j reporters.JUnitTestSuites
		if err := xml.Unmarshal(b, &j); err != nil {
			t.Fatal(err)
		}
		failOn := map[bool]string{false: "must", true: "should"}[failOnShould]
		exit := report.ExitCode(d, failOn, o.AllowPartial)
		if (j.Failures > 0) != (exit != 0) {
			t.Errorf("%+v: junit has %d failures, exit code %d", o, j.Failures, exit)
		}
		want := report.VerdictPartial
		if failOnShould {
			// The run fails on its SHOULD failure: the verdict says so,
			// as the exit code does.
			want = report.VerdictFail
		} else if !strings.Contains(string(b), "gwconform.coverage") {
			t.Errorf("%+v: no coverage test case in a PARTIAL run's junit.xml", o)
		}
		if !failOnShould && !strings.Contains(string(b), "SHOULD check failed") {
			t.Errorf("the SHOULD failure is not shown in junit.xml:\n%s", b)
		}
		props := j.TestSuites[0].Properties
		if props.WithName("gwconform.verdict") != want || d.Verdict != want || !strings.Contains(props.WithName("gwconform.not_covered.1"), "Thermostat") {
			t.Errorf("junit properties %+v", props)
		}
	}
}

// TestConsoleListsMustFailuresFirst: the console names the MUST failures
// before the SHOULD ones, whatever their IDs, so the first lines a vendor
// reads are those that decide the verdict, also past the listed blocks.
func TestConsoleListsMustFailuresFirst(t *testing.T) {
	var specs types.SpecReports
	for i := 0; i < report.MaxListed+3; i++ {
		s := spec(fmt.Sprintf("[a.should.%02d] should", i), types.SpecStateFailed, "level:SHOULD", "section:2.3", "format:json")
		s.Failure.Message = "status 422, want 400"
		specs = append(specs, s)
	}
	must := spec("[z.must] must", types.SpecStateFailed, "level:MUST", "section:2.3", "format:json")
	must.Failure.Message = "accepted"
	specs = append(specs, must)
	d := report.Build(types.Report{SuiteDescription: "gwconform", SpecReports: specs}, "x", fixtureCatalog())
	var b bytes.Buffer
	report.WriteSummary(&b, d)
	out := b.String()
	m, s := strings.Index(out, "z.must"), strings.Index(out, "a.should.00")
	if m < 0 || s < 0 || m > s {
		t.Errorf("the MUST failure is not listed first:\n%s", out)
	}
}
