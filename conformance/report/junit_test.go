package report_test

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/report"
)

// TestJUnitFromTheReport: the JUnit file of a run with a failure, a skip
// and a pass is valid XML with one test case per check and the right
// counts; the failure carries its message and the check's properties, the
// skip its reason, and the suite the seed, the catalog and the target
// without its credentials.
func TestJUnitFromTheReport(t *testing.T) {
	pass := spec("[U.1] passes", types.SpecStatePassed, "level:MUST", "section:2.3", "format:json")
	fail := spec("[U.2] fails", types.SpecStateFailed, "level:MUST", "section:2.3", "format:xml")
	fail.Failure.Message = "status 500 & <no body>, want 400"
	skip := skipped("[U.3] skips", "the fleet has no Thermostat", "level:MUST", "section:2.3", "type:thermostat")
	r := types.Report{SuiteConfig: types.SuiteConfig{RandomSeed: 42}, SpecReports: types.SpecReports{pass, fail, skip}}
	dir := t.TempDir()
	cat := report.CatalogID{Harness: "9.9.9", Version: "2026.1.1", Hash: "abc123"}
	if _, err := report.WriteAll(dir, r, "https://user:hunter2@gw.example:8443/base", report.WriteOptions{Checks: fixtureCatalog(), Catalog: cat, AllowPartial: true}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, report.JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suites   []struct {
			Tests      int `xml:"tests,attr"`
			Failures   int `xml:"failures,attr"`
			Skipped    int `xml:"skipped,attr"`
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Status  string `xml:"status,attr"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Properties []struct {
					Name  string `xml:"name,attr"`
					Value string `xml:"value,attr"`
				} `xml:"properties>property"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatalf("junit.xml is not valid XML: %v\n%s", err, b)
	}
	if len(j.Suites) != 1 {
		t.Fatalf("%d suites", len(j.Suites))
	}
	s := j.Suites[0]
	// Three checks (the run FAILs: no coverage case).
	if j.Tests != 3 || s.Tests != 3 || j.Failures != 1 || s.Failures != 1 || s.Skipped != 1 || j.Errors != 0 || len(s.Cases) != 3 {
		t.Errorf("counts: tests %d/%d, failures %d/%d, skipped %d, errors %d, cases %d\n%s", j.Tests, s.Tests, j.Failures, s.Failures, s.Skipped, j.Errors, len(s.Cases), b)
	}
	byName := map[string]int{}
	for i, c := range s.Cases {
		byName[c.Name] = i
	}
	// A check's test case is named by its ID; a passed one says no more.
	if i, ok := byName["U.1"]; !ok || s.Cases[i].Status != "" || s.Cases[i].Failure != nil || s.Cases[i].Skipped != nil || len(s.Cases[i].Properties) != 0 {
		t.Errorf("the passed check: %+v", s.Cases)
	}
	if i, ok := byName["U.2"]; !ok || s.Cases[i].Failure == nil || s.Cases[i].Failure.Message != fail.Failure.Message {
		t.Errorf("the failed check: %+v", s.Cases)
	} else if text := s.Cases[i].Failure.Text; !strings.Contains(text, "rule: section 2.3") {
		// The text says the rule (its section, level and title are the
		// catalog's, which the ID names).
		t.Errorf("the failed check's text: %q", text)
	}
	if i, ok := byName["U.3"]; !ok || s.Cases[i].Skipped == nil || !strings.Contains(s.Cases[i].Skipped.Message, "the fleet has no Thermostat") {
		t.Errorf("the skipped check: %+v", s.Cases)
	}
	props := map[string]string{}
	for _, p := range s.Properties {
		props[p.Name] = p.Value
	}
	if props["gwconform.seed"] != "42" || props["gwconform.catalog_version"] != cat.Version || props["gwconform.catalog_hash"] != cat.Hash ||
		props["gwconform.harness_version"] != cat.Harness || props["gwconform.verdict"] != report.VerdictFail {
		t.Errorf("suite properties: %v", props)
	}
	if props["gwconform.target"] != "https://gw.example:8443/base" || strings.Contains(string(b), "hunter2") {
		t.Errorf("the target's credentials are in junit.xml: %q", props["gwconform.target"])
	}
}

// TestJUnitCheckNamesEveryCheck: the check gwconform verify runs on a
// bundle's junit.xml accepts the file written for a report and refuses one
// that lacks a check's test case, or does not parse.
func TestJUnitCheckNamesEveryCheck(t *testing.T) {
	r := types.Report{SpecReports: types.SpecReports{
		spec("[V.1] one", types.SpecStatePassed, "level:MUST", "section:2.3"),
		spec("[V.2] two", types.SpecStatePassed, "level:MUST", "section:2.3"),
	}}
	dir := t.TempDir()
	d, err := report.WriteAll(dir, r, "x", report.WriteOptions{Checks: fixtureCatalog()})
	if err != nil {
		t.Fatal(err)
	}
	var w report.Writer
	for _, x := range report.Writers {
		if x.File == report.JUnitFile {
			w = x
		}
	}
	if w.Check == nil {
		t.Fatal("the JUnit writer has no check")
	}
	b, _ := os.ReadFile(filepath.Join(dir, report.JUnitFile))
	if err := w.Check(b, d); err != nil {
		t.Errorf("the written file: %v", err)
	}
	cut := strings.Replace(string(b), `name="V.2"`, `name="V.3"`, 1)
	if err := w.Check([]byte(cut), d); err == nil || !strings.Contains(err.Error(), "V.2") {
		t.Errorf("a file without V.2: %v", err)
	}
	if err := w.Check([]byte("<testsuites"), d); err == nil {
		t.Error("a file that does not parse passed")
	}
}
