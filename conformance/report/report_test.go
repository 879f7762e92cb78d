package report_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

var sample = flag.String("sample", "", "also write the HTML report of the test data to this file")

// TestReport runs the fixture suite (the only RunSpecs of this binary),
// marks two of its checks failed and checks all that report makes of it.
func TestReport(t *testing.T) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	if !ginkgo.RunSpecs(t, "report fixture") {
		t.Fatal("the fixture suite failed")
	}
	if len(captured.SpecReports) == 0 {
		t.Fatal("ReportAfterSuite captured no report")
	}
	r := withFailures(captured)
	const target = base

	d := report.Build(r, target, fixtureCatalog())
	t.Run("Build", func(t *testing.T) { checkDocument(t, d, true) })

	dir := filepath.Join(t.TempDir(), "a", "b")
	// With --fail-on should, a failed or panicked SHOULD check is a JUnit
	// failure (see TestJUnitAgreesWithTheExitCode for the default).
	written, err := report.WriteAll(dir, r, target, report.WriteOptions{Checks: fixtureCatalog(), FailOnShould: true})
	if err != nil {
		t.Fatal(err)
	}
	if written.Files.HTML != filepath.Join(dir, "report.html") {
		t.Errorf("Files = %+v", written.Files)
	}
	t.Run("JSON", func(t *testing.T) { checkJSON(t, written.Files.JSON, d) })
	t.Run("JUnit", func(t *testing.T) { checkJUnit(t, written.Files.JUnit, r) })
	t.Run("HTML", func(t *testing.T) { checkHTML(t, written.Files.HTML, d) })
	t.Run("Summary", func(t *testing.T) {
		var b bytes.Buffer
		report.WriteSummary(&b, written)
		out := b.String()
		t.Log("\n" + out)
		for _, want := range []string{"FAIL", base, "MUST", "17 checks", "14 passed, 1 failed, 2 skipped", "[" + FailingID + "]", "[" + PanickedID + "]", "Reports: " + written.Files.HTML + " (also report.json, junit.xml"} {
			if !strings.Contains(out, want) {
				t.Errorf("summary lacks %q:\n%s", want, out)
			}
		}
		// The console names every file the run wrote (report.Writers).
		for _, w := range report.Writers {
			if !strings.Contains(out, w.File) {
				t.Errorf("summary does not name %s:\n%s", w.File, out)
			}
		}
		if strings.Contains(out, "INFO.CT.1") {
			t.Errorf("summary lists an INFO check as failed:\n%s", out)
		}
	})
	t.Run("RoundTrip", func(t *testing.T) {
		// A report saved with --ginkgo.json-report and loaded again has its
		// exchanges only as JSON.
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var loaded types.Report
		if err := json.Unmarshal(b, &loaded); err != nil {
			t.Fatal(err)
		}
		d2 := report.Build(loaded, target, fixtureCatalog())
		checkDocument(t, d2, false)
		if !reflect.DeepEqual(d.Results, d2.Results) {
			t.Errorf("results differ after a JSON round trip")
		}
		if err := report.WriteJUnit(filepath.Join(t.TempDir(), "j.xml"), d2, report.WriteOptions{Checks: fixtureCatalog()}); err != nil {
			t.Error(err)
		}
	})
	if *sample != "" {
		if err := report.WriteHTML(*sample, d); err != nil {
			t.Fatal(err)
		}
		t.Logf("sample written to %s", *sample)
	}
}

// withFailures copies r and marks FailingID failed and PanickedID panicked.
func withFailures(r types.Report) types.Report {
	r.SpecReports = slices.Clone(r.SpecReports)
	r.SuiteSucceeded = false
	for i, sr := range r.SpecReports {
		switch check.IDFromLabels(sr.Labels()) {
		case FailingID:
			sr.State = types.SpecStateFailed
			sr.Failure = types.Failure{
				Message:  "Expected\n    <int>: 500\nto equal\n    <int>: 200",
				Location: types.CodeLocation{FileName: "/src/conformance/suite/command.go", LineNumber: 42},
			}
		case PanickedID:
			sr.State = types.SpecStatePanicked
			sr.Failure = types.Failure{
				Message:        "Test Panicked",
				ForwardedPanic: "runtime error: index out of range [3] with length 3",
				Location:       types.CodeLocation{FileName: "/src/conformance/suite/errors.go", LineNumber: 7},
			}
		}
		r.SpecReports[i] = sr
	}
	return r
}

func checkDocument(t *testing.T, d report.Document, live bool) {
	t.Helper()
	if d.Target != base || d.Verdict != report.VerdictFail {
		t.Errorf("target %q verdict %q", d.Target, d.Verdict)
	}
	if d.Seed == 0 || d.StartedAt.IsZero() || d.DurationMS <= 0 {
		t.Errorf("seed %d started %v duration %v", d.Seed, d.StartedAt, d.DurationMS)
	}
	want := map[string]report.Counts{
		"MUST":   {Total: 17, Passed: 14, Failed: 1, Skipped: 2},
		"SHOULD": {Total: 3, Passed: 2, Failed: 1},
		"INFO":   {Total: 2, Passed: 2},
	}
	if !reflect.DeepEqual(d.Summary.ByLevel, want) {
		t.Errorf("ByLevel = %+v", d.Summary.ByLevel)
	}
	if d.Summary.Other != (report.Counts{Total: 1, Passed: 1}) {
		t.Errorf("Other = %+v", d.Summary.Other)
	}
	if d.Summary.Counts != (report.Counts{Total: 23, Passed: 19, Failed: 2, Skipped: 2}) {
		t.Errorf("Counts = %+v", d.Summary.Counts)
	}
	if !slices.Equal(d.Summary.FailedChecks, []string{FailingID, PanickedID}) {
		t.Errorf("FailedChecks = %v", d.Summary.FailedChecks)
	}
	if d.FailedAt("MUST") != 1 || d.FailedAt("SHOULD") != 1 || d.FailedAt("INFO") != 0 {
		t.Errorf("FailedAt = %d %d %d", d.FailedAt("MUST"), d.FailedAt("SHOULD"), d.FailedAt("INFO"))
	}

	var ids []string
	for _, r := range d.Results {
		ids = append(ids, r.ID)
	}
	if i, j := slices.Index(ids, "VER.2"), slices.Index(ids, "VER.10"); i < 0 || j != i+1 {
		t.Errorf("IDs are not in natural order: %v", ids)
	}
	if last := d.Results[len(d.Results)-1]; last.ID != "" || last.Level != "" || !strings.Contains(last.Text, "a plain spec") || last.Outcome != report.Passed {
		t.Errorf("plain spec: %+v", last)
	}

	f, ok := d.Result(FailingID)
	if !ok || f.Outcome != report.Failed || f.State != "failed" || f.Level != "MUST" || f.DeviceType != "Thermostat" || f.Format != "json" {
		t.Fatalf("failing check: %+v", f)
	}
	if !strings.Contains(f.Failure, "to equal") || strings.Contains(f.Failure, "command.go") {
		t.Errorf("failure text %q", f.Failure)
	}
	if len(f.Exchanges) != 1 || f.Exchanges[0].ResponseBody != scriptBody || f.Exchanges[0].Status != 500 || f.Exchanges[0].Duration != 2*time.Millisecond {
		t.Errorf("exchanges %+v", f.Exchanges)
	}
	if len(f.Curl) != 1 || !strings.HasPrefix(f.Curl[0], "curl ") || !strings.Contains(f.Curl[0], "/v1/services/gateway/command") {
		t.Errorf("curl %v", f.Curl)
	}
	// A check's labels follow from its metadata; the reports keep the
	// metadata, not the labels again.
	if f.Level != "MUST" || f.DeviceType != "Thermostat" || f.Labels != nil || f.Text != "" {
		t.Errorf("level %q, type %q, labels %v, text %q", f.Level, f.DeviceType, f.Labels, f.Text)
	}
	p, _ := d.Result(PanickedID)
	if p.Outcome != report.Failed || p.State != "panicked" || !strings.Contains(p.Failure, "index out of range") || p.Contract != "4" {
		t.Errorf("panicked check: %+v", p)
	}
	s, _ := d.Result("CMD.5.XML")
	if s.Outcome != report.Skipped || s.Reason != "no Infrared Sensor device in the fleet" || len(s.Exchanges) != 0 {
		t.Errorf("skipped check: %+v", s)
	}
	if !live {
		return
	}

	sections := map[string]report.SectionCoverage{}
	for _, sc := range d.Sections {
		sections[sc.Number] = sc
	}
	if len(d.Sections) != len(check.Sections)+1 {
		t.Errorf("%d sections", len(d.Sections))
	}
	if sc := sections["4.1"]; len(sc.Checks) != 12 || !sc.Published {
		t.Errorf("4.1: %+v", sc)
	}
	if sc := sections["7"]; len(sc.Checks) != 1 || sc.Checks[0].ID != PanickedID || sc.Gap == "" {
		t.Errorf("7: %+v", sc)
	}
	if sc := sections["6"]; len(sc.Checks) != 0 || sc.Gap == "" {
		t.Errorf("6: %+v", sc)
	}
	if sc := sections["2"]; !sc.HasSubsections || len(sc.Checks) != 0 {
		t.Errorf("2: %+v", sc)
	}
	if sc := sections["4.5"]; sc.Published || len(sc.Checks) != 1 {
		t.Errorf("4.5: %+v", sc)
	}

	// A row for every type of the table, in its order (the fixture's six
	// first); a type the fixture sends nothing to has an empty row.
	if len(d.Grid) != len(device.Types) || d.Grid[0].DeviceType != "Appliance Module" || d.Grid[5].DeviceType != "Light Dimmer" {
		t.Fatalf("grid rows %+v", d.Grid)
	}
	cell := func(row, col int) report.Cell { return d.Grid[row].Cells[col] }
	if c := cell(3, 0); c.Format != "json" || c.Status() != "failed" || c.Total != 1 || !slices.Equal(c.FailedIDs, []string{FailingID}) {
		t.Errorf("Thermostat json: %+v", c)
	}
	if c := cell(4, 1); c.Status() != "none" || c.Skipped != 1 {
		t.Errorf("Infrared Sensor xml: %+v", c)
	}
	// Light Dimmer JSON: the MUST command check and the SHOULD range check;
	// the INFO check in XML does not count.
	if c := cell(5, 0); c.Status() != "passed" || c.Passed != 2 || c.Total != 2 {
		t.Errorf("Light Dimmer json: %+v", c)
	}
	if c := cell(5, 1); c.Total != 1 {
		t.Errorf("Light Dimmer xml: %+v", c)
	}
}

func checkJSON(t *testing.T, path string, d report.Document) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := report.Read(b, fixtureCatalog())
	if err != nil {
		t.Fatal(err)
	}
	// Read with no catalog, a passed check keeps its ID, level and
	// outcome only: the metadata comes from the catalog handed to Read,
	// never from what the process happened to declare.
	bare, err := report.Read(b, check.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range bare.Results {
		if r.ID == "AUTH.1" && (r.Title != "" || r.Level != "MUST" || r.Outcome != report.Passed) {
			t.Errorf("read with no catalog, the passed check AUTH.1 reads %+v", r)
		}
	}
	if !reflect.DeepEqual(got.Summary, d.Summary) || got.Verdict != d.Verdict || got.Seed != d.Seed || !got.StartedAt.Equal(d.StartedAt) {
		t.Errorf("summary after JSON: %+v", got.Summary)
	}
	// A passed, skipped or inconclusive check is written without what the
	// catalog says of it (report.marshalLines), and read back whole from
	// the catalog; a passed check that is not in the catalog comes back
	// abridged; every other result comes back as it was.
	want := append([]report.Result(nil), d.Results...)
	abridged := 0
	for i := range want {
		r := &want[i]
		r.DurationMS = math.Round(r.DurationMS*100) / 100
		r.Curl = nil // the exchanges give them
		if r.State == r.Outcome {
			r.State = ""
		}
		if r.IsCheck() && r.Outcome != report.Failed {
			abridged++
		}
		if r.IsCheck() && r.Outcome == report.Passed && r.Level != "INFO" {
			r.ExchangesOmitted = 0 // "passed" lists the check by its ID and time
			if _, ok := fixtureCatalog().Lookup(r.ID); !ok {
				*r = report.Result{ID: r.ID, Level: r.Level, Outcome: r.Outcome, DurationMS: r.DurationMS, Exchanges: r.Exchanges}
			}
		}
	}
	if abridged == 0 {
		t.Fatal("the fixture has no check that report.json abridges")
	}
	if len(got.Results) != len(want) {
		t.Errorf("%d results after JSON, want %d", len(got.Results), len(want))
	}
	if !reflect.DeepEqual(got.Results, want) {
		for i := range got.Results {
			if !reflect.DeepEqual(got.Results[i], want[i]) {
				t.Errorf("result %d differs after JSON:\n%+v\n%+v", i, got.Results[i], want[i])
				break
			}
		}
	}
	var raw struct {
		Summary struct {
			Total        int      `json:"total"`
			FailedChecks []string `json:"failed_checks"`
		} `json:"summary"`
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	skippedKnown := 0
	for _, r := range raw.Results {
		id, _ := r["id"].(string)
		if _, known := fixtureCatalog().Lookup(id); known && (r["outcome"] == report.Skipped || r["outcome"] == report.Inconclusive) {
			skippedKnown++
			if _, has := r["title"]; has {
				t.Errorf("report.json writes the %s check %s whole: %v", r["outcome"], id, r)
			}
		}
	}
	if skippedKnown == 0 {
		t.Error("the fixture has no skipped or inconclusive check of the catalog: the abridged lines go untested")
	}
	if raw.Summary.Total != 23 || len(raw.Summary.FailedChecks) != 2 {
		t.Errorf("raw summary %+v", raw.Summary)
	}
	for _, k := range []string{"id", "level", "section", "title", "assertion", "outcome", "failure", "exchanges", "device_type", "format", "duration_ms"} {
		found := false
		for _, r := range raw.Results {
			if r["id"] == FailingID {
				_, found = r[k]
			}
		}
		if !found {
			t.Errorf("report.json result has no key %q", k)
		}
	}
}

func checkJUnit(t *testing.T, path string, r types.Report) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j reporters.JUnitTestSuites
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if len(j.TestSuites) != 1 || len(j.TestSuites[0].TestCases) != len(r.SpecReports) {
		t.Fatalf("junit: %d suites", len(j.TestSuites))
	}
	if j.Failures != 1 || j.Errors != 1 {
		t.Errorf("junit failures %d errors %d", j.Failures, j.Errors)
	}
	var seen bool
	for _, tc := range j.TestSuites[0].TestCases {
		if tc.Name != FailingID {
			continue
		}
		seen = true
		if tc.Failure == nil || tc.Status != "failed" || !strings.Contains(tc.Failure.Message, "500") {
			t.Errorf("testcase %+v", tc)
		}
		// The failure's text: its rule and exchange, and how to send it again.
		if tc.Failure == nil || !strings.Contains(tc.Failure.Description, "< 500") || !strings.Contains(tc.Failure.Description, "gwconform replay "+filepath.Join(filepath.Dir(path), "report.json")+" "+FailingID) {
			t.Errorf("failure text: %+v", tc.Failure)
		}
	}
	if !seen {
		t.Errorf("no testcase for %s", FailingID)
	}
	// The caller's report is left alone.
	for _, sr := range r.SpecReports {
		for _, e := range sr.ReportEntries {
			if strings.HasPrefix(e.Name, "check.") {
				t.Fatalf("WriteJUnit changed the caller's report")
			}
		}
	}
}

func checkHTML(t *testing.T, path string, d report.Document) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	scripts := 0
	defer func() {
		if scripts != 1 {
			t.Errorf("page has %d <script> elements, want the page's one", scripts)
		}
	}()
	ids := map[string]bool{}
	var packed []string
	rows := "" // the catalog's rows, as data the page's script draws
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script":
				// One inline script, ours, and the packed parts it draws.
				if len(n.Attr) == 2 && n.Attr[0].Val == "application/octet-stream" && n.FirstChild != nil {
					if n.Attr[1].Val == "catalog-rows" {
						rows = n.FirstChild.Data
						break
					}
					packed = append(packed, n.FirstChild.Data)
					break
				}
				scripts++
				if n.FirstChild == nil || !strings.Contains(n.FirstChild.Data, `DecompressionStream("gzip")`) || len(n.Attr) > 0 {
					t.Errorf("page has a <script> element that is not the page's")
				}
			case "link", "img", "iframe", "object", "embed":
				t.Errorf("page has a <%s> element", n.Data)
			}
			for _, a := range n.Attr {
				v := strings.ToLower(strings.TrimSpace(a.Val))
				if (a.Key == "src" || a.Key == "href") && !strings.HasPrefix(v, "#") {
					t.Errorf("external reference %s=%q", a.Key, a.Val)
				}
				if a.Key == "id" {
					if ids[a.Val] {
						t.Errorf("duplicate id %q", a.Val)
					}
					ids[a.Val] = true
				}
			}
		}
		if n.Type == html.TextNode && (n.Parent == nil || n.Parent.Data != "script") {
			text.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	unpack := func(p string) []byte {
		z, err := base64.StdEncoding.DecodeString(strings.TrimSpace(p))
		if err != nil {
			t.Fatalf("a packed part is not base64: %v", err)
		}
		gz, err := gzip.NewReader(bytes.NewReader(z))
		if err != nil {
			t.Fatal(err)
		}
		part, err := io.ReadAll(gz)
		if err != nil {
			t.Fatal(err)
		}
		return part
	}
	// The catalog's rows: one a result, in its order, with its anchor,
	// outcome and the text the row and its details show (the page's
	// script escapes it: TestReportHTMLInChromium draws them).
	var catalog []struct {
		Anchor  string `json:"a"`
		ID      string `json:"id"`
		Outcome string `json:"o"`
		Card    bool   `json:"cd"`
	}
	var data struct {
		Sections map[string]string `json:"sections"`
		Rows     json.RawMessage   `json:"rows"`
	}
	var texts []map[string]any
	if b := unpack(rows); json.Unmarshal(b, &data) != nil || json.Unmarshal(data.Rows, &catalog) != nil || json.Unmarshal(data.Rows, &texts) != nil {
		t.Fatalf("the catalog's rows are not JSON: %.200s", b)
	}
	for _, title := range data.Sections {
		text.WriteString(title + "\n")
	}
	if len(catalog) != len(d.Results) {
		t.Errorf("the catalog has %d rows, want %d", len(catalog), len(d.Results))
	}
	for i, c := range catalog {
		if i < len(d.Results) && (c.ID != d.Results[i].ID || c.Outcome != d.Results[i].Outcome) {
			t.Errorf("catalog row %d: %+v, want %s %s", i, c, d.Results[i].ID, d.Results[i].Outcome)
		}
		if c.Anchor == "" {
			catalog[i].Anchor = "c-" + c.ID // the script's default
		}
		ids["r-"+catalog[i].Anchor] = true
		for _, v := range texts[i] {
			text.WriteString(fmt.Sprint(v) + "\n")
		}
	}
	// The packed parts, drawn as the page's script draws them.
	var parts []*html.Node
	for len(packed) > 0 {
		part := unpack(packed[0])
		packed = packed[1:]
		nodes, err := html.ParseFragment(bytes.NewReader(part), &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			walk(n)
			parts = append(parts, n)
		}
	}
	// Every in-page link lands somewhere.
	var links func(*html.Node)
	links = func(n *html.Node) {
		for _, a := range n.Attr {
			if a.Key == "href" && !ids[strings.TrimPrefix(a.Val, "#")] {
				t.Errorf("dangling link %q", a.Val)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			links(c)
		}
	}
	links(doc)
	for _, n := range parts {
		links(n)
	}
	for _, c := range catalog {
		if c.Card && !ids[c.Anchor] {
			t.Errorf("the catalog's row %s links to a card the page does not have", c.ID)
		}
	}
	if strings.Contains(src, "@import") || strings.Contains(src, "url(") {
		t.Errorf("CSS fetches something")
	}
	if !strings.Contains(text.String(), scriptBody) || !strings.Contains(src, "&lt;script&gt;") {
		t.Errorf("the response body is not shown escaped")
	}
	for _, want := range []string{"FAIL", FailingID, PanickedID, "runtime error: index out of range", "curl -sS -i -X POST", "observed 415", "Thermostat", "not shown; nothing to check", "no check", base} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("page text lacks %q", want)
		}
	}
	if !ids["c-cmd.4.json"] {
		t.Errorf("no failure section for %s", FailingID)
	}
	if strings.Contains(src, "ZgotmplZ") {
		t.Errorf("html/template rejected a value")
	}
}
