package report_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/client"
)

// TestJUnitBytes: junit.xml is, byte for byte, the file below for each
// input: the hand-built runs of TestJUnitFromTheReport and
// TestJUnitAgreesWithTheExitCode written by WriteAll, and a Document with
// one result of every outcome (exchanges, a body cut at maxJUnitBody, an
// exchange repeated by another check, control characters, "]]>") written
// by WriteJUnit. A change to the JUnit model or its encoding that moves a
// byte shows here.
func TestJUnitBytes(t *testing.T) {
	for name, got := range junitFiles(t) {
		want, ok := wantJUnit[name]
		if !ok {
			t.Errorf("%s: no file to compare with:\n%s", name, got)
			continue
		}
		if got != want {
			t.Errorf("%s: junit.xml differs from the file below at %s\ngot:\n%s", name, firstDifference(got, want), got)
		}
	}
}

// firstDifference names the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n  got  " + gl + "\n  want " + wl
		}
	}
	return "(no line differs)"
}

// junitFiles writes each input's junit.xml and returns them by name. Its
// checks are in section 9.9, which the catalog does not title, so that a
// section's wording in the catalog leaves these bytes as they are.
func junitFiles(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	read := func(name, path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = string(b)
	}

	// TestJUnitFromTheReport's run.
	pass := spec("[U.1] passes", types.SpecStatePassed, "level:MUST", "section:9.9", "format:json")
	fail := spec("[U.2] fails", types.SpecStateFailed, "level:MUST", "section:9.9", "format:xml")
	fail.Failure.Message = "status 500 & <no body>, want 400"
	skip := skipped("[U.3] skips", "the fleet has no Thermostat", "level:MUST", "section:9.9", "type:thermostat")
	r := types.Report{SuiteConfig: types.SuiteConfig{RandomSeed: 42}, SpecReports: types.SpecReports{pass, fail, skip}}
	dir := t.TempDir()
	cat := report.CatalogID{Harness: "9.9.9", Version: "2026.1.1", Hash: "abc123"}
	if _, err := report.WriteAll(dir, r, "https://user:hunter2@gw.example:8443/base", report.WriteOptions{Checks: fixtureCatalog(), Catalog: cat, AllowPartial: true}); err != nil {
		t.Fatal(err)
	}
	read("run", filepath.Join(dir, report.JUnitFile))

	// TestJUnitAgreesWithTheExitCode's run, under each option.
	should := spec("[J.2] should", types.SpecStateFailed, "level:SHOULD", "section:9.9", "format:json")
	should.Failure.Message = "status 422, want 400"
	thermo := skipped("[J.3] thermostat", "the fleet has no Thermostat", "level:MUST", "section:9.9", "type:thermostat", "format:json")
	r = types.Report{SuiteDescription: "gwconform", SpecReports: types.SpecReports{spec("[J.1] passes", types.SpecStatePassed, "level:MUST", "section:9.9", "format:json"), should, thermo}}
	for name, o := range map[string]report.WriteOptions{
		"exit":                              {},
		"exit-fail-on-should":               {FailOnShould: true},
		"exit-allow-partial":                {AllowPartial: true},
		"exit-fail-on-should-allow-partial": {FailOnShould: true, AllowPartial: true},
	} {
		dir := t.TempDir()
		if _, err := report.WriteAll(dir, r, "x", o); err != nil {
			t.Fatal(err)
		}
		read(name, filepath.Join(dir, report.JUnitFile))
	}

	// A Document with one result of every outcome.
	d := everyOutcome()
	for name, o := range map[string]report.WriteOptions{
		"every-outcome": {},
		"every-outcome-fail-on-should-allow-partial": {FailOnShould: true, AllowPartial: true},
	} {
		path := filepath.Join(t.TempDir(), report.JUnitFile)
		if err := report.WriteJUnit(path, d, o); err != nil {
			t.Fatal(err)
		}
		read(name, path)
	}
	return out
}

// everyOutcome is a PARTIAL run's Document with a result of each outcome
// and level, and what the suite's properties name.
func everyOutcome() report.Document {
	long := `{"status":"error","message":"` + strings.Repeat("é", 400) + `"}`
	command := client.Exchange{Method: "POST", URL: "http://127.0.0.1:8080/v1/services/gateway/command",
		RequestBody: `{"api_key":"demo…","mac":"a4c138f0e2b1","type":"Thermostat","note":"a ]]> inside"}`,
		Status:      500, ResponseBody: "<xml><status>error</status><message>bad\x01byte & \"quotes\"</message></xml>", Duration: 3 * time.Millisecond}
	silent := client.Exchange{Method: "GET", URL: "http://127.0.0.1:8080/v1/devices?x=1&y=2", Error: "read tcp: connection reset by peer"}
	cut := client.Exchange{Method: "POST", URL: "http://127.0.0.1:8080/v1/services/gateway/command", RequestBody: `{"a":"b"}`, Status: 400, ResponseBody: long}
	check := func(id, level, outcome, state string) report.Result {
		return report.Result{ID: id, Level: level, Section: "9.9", Title: "title of " + id, Outcome: outcome, State: state, DurationMS: 2.6}
	}
	failed := check("CMD.1.JSON", "MUST", report.Failed, "failed")
	failed.Assertion = `the answer is {"status":"success"}`
	failed.Contract = "3"
	failed.Tags = []string{report.RuleTag + "API-2.3.status"}
	failed.Failure = "Expected\n    <int>: 500\nto equal\n    <int>: 200"
	failed.Observations = []string{"the observer showed name \"Hall\""}
	failed.Exchanges = []client.Exchange{command, silent, cut}
	twin := check("CMD.1.JSON.contract", "MUST", report.Failed, "failed")
	twin.Failure = "status 500, want 200"
	twin.Exchanges = []client.Exchange{command}
	panicked := check("ERR.1", "MUST", report.Failed, "panicked")
	panicked.Failure = "Test Panicked\nruntime error: index out of range [3] with length 3"
	interrupted := check("ERR.2", "MUST", report.Interrupted, "interrupted")
	interrupted.Failure = "interrupted by user"
	shouldFailed := check("HDR.1", "SHOULD", report.Failed, "failed")
	shouldFailed.Failure = "no Content-Type"
	shouldFailed.Exchanges = []client.Exchange{cut}
	info := check("INFO.CT.1", "INFO", report.Failed, "failed")
	info.Failure = "could not read the answer"
	info.Observations = []string{"status 200 with text/plain\ttabbed"}
	skippedCheck := check("SKIP.1", "MUST", report.Skipped, "skipped")
	skippedCheck.Reason = "the fleet has no Thermostat"
	pending := check("PEND.1", "MUST", report.Pending, "pending")
	pending.Reason = "not written yet"
	inconclusive := check("INC.1", "MUST", report.Inconclusive, "")
	inconclusive.Reason = "inconclusive: the observer did not answer"
	inconclusive2 := check("INC.2", "SHOULD", report.Inconclusive, "")
	inconclusive2.Reason = "the state never settled"
	known := check("KNOWN.1", "MUST", report.ExpectedFailure, "failed")
	known.Failure = "status 404, want 200"
	known.Reason = "known failure (baseline): JIRA-12, until 2027-01-01"
	known.Exchanges = []client.Exchange{silent}
	passed := check("OK.1", "MUST", report.Passed, "passed")
	passed.DurationMS = 0.4
	suiteNode := report.Result{Text: "[BeforeSuite] the fleet loads", Node: "BeforeSuite", Outcome: report.Failed, State: "failed", Failure: "fleet.yaml: no such file", DurationMS: 1500}
	return report.Document{
		Target:              "https://admin:secret@gw.example:8443/base (observer http://127.0.0.1:9)",
		Catalog:             report.CatalogID{Harness: "1.2.3", Version: "2026.11.10", Hash: "f00d"},
		Seed:                -17,
		LabelFilter:         "level:MUST && !sim",
		StartedAt:           time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("CET", 3600)),
		DurationMS:          12345.678,
		Verdict:             report.VerdictPartial,
		SuiteFailureReasons: []string{"Interrupted by User", "Detected 1 Programmatic Focus"},
		Summary:             report.Summary{Counts: report.Counts{Inconclusive: 2}},
		Results:             []report.Result{failed, twin, panicked, interrupted, shouldFailed, info, skippedCheck, pending, inconclusive, inconclusive2, known, passed, suiteNode},
		NotCovered:          []report.Gap{{What: "device type Thermostat", Why: "the fleet has none", Checks: 40}, {What: "format xml", Why: "filtered"}},
		Effects:             "effects not observed: no observer",
		Stopped:             "the target stopped answering",
	}
}

// wantJUnit are the files junitFiles writes, by name.
var wantJUnit = map[string]string{
	"every-outcome": `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="14" disabled="1" errors="2" failures="4" time="12.345678">
 <testsuite name="gwconform" tests="14" disabled="1" skipped="6" errors="2" failures="4" time="12.345678" timestamp="2026-01-02T02:04:05">
  <properties>
   <property name="gwconform.verdict" value="PARTIAL"/>
   <property name="gwconform.target" value="https://gw.example:8443/base (observer http://127.0.0.1:9)"/>
   <property name="gwconform.seed" value="-17"/>
   <property name="gwconform.harness_version" value="1.2.3"/>
   <property name="gwconform.catalog_version" value="2026.11.10"/>
   <property name="gwconform.catalog_hash" value="f00d"/>
   <property name="gwconform.inconclusive" value="2"/>
   <property name="gwconform.label_filter" value="level:MUST &amp;&amp; !sim"/>
   <property name="gwconform.effects" value="effects not observed: no observer"/>
   <property name="gwconform.stopped" value="the target stopped answering"/>
   <property name="gwconform.suite_failure.1" value="Interrupted by User"/>
   <property name="gwconform.suite_failure.2" value="Detected 1 Programmatic Focus"/>
   <property name="gwconform.not_covered.1" value="device type Thermostat: the fleet has none (40 checks not run)"/>
   <property name="gwconform.not_covered.2" value="format xml: filtered"/>
  </properties>
  <testcase name="CMD.1.JSON" classname="gwconform.CMD.1" status="failed" time="0.003">
   <failure message="Expected&#xA;    &lt;int&gt;: 500&#xA;to equal&#xA;    &lt;int&gt;: 200" type="failed"><![CDATA[expected: the answer is {"status":"success"}
rule: section 9.9; CONTRACT 3; rule API-2.3.status
the observer showed name "Hall"
exchange 1: POST http://127.0.0.1:8080/v1/services/gateway/command
> {"api_key":"demo…","mac":"a4c138f0e2b1","type":"Thermostat","note":"a ]]]]><![CDATA[> inside"}
< 500 <xml><status>error</status><message>bad�byte & "quotes"</message></xml>
exchange 2: GET http://127.0.0.1:8080/v1/devices?x=1&y=2
< no answer: read tcp: connection reset by peer
exchange 3: POST http://127.0.0.1:8080/v1/services/gateway/command
> {"a":"b"}
< 400 {"status":"error","message":"ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé… (831 bytes in all: report.json has it whole)
reproduce: gwconform replay report.json CMD.1.JSON
]]></failure>
  </testcase>
  <testcase name="CMD.1.JSON.contract" classname="gwconform.CMD.1" status="failed" time="0.003">
   <failure message="status 500, want 200" type="failed"><![CDATA[rule: section 9.9
exchange 1: the same request and answer as CMD.1.JSON#1
reproduce: gwconform replay report.json CMD.1.JSON.contract
]]></failure>
  </testcase>
  <testcase name="ERR.1" classname="gwconform.ERR.1" status="panicked" time="0.003">
   <error message="Test Panicked&#xA;runtime error: index out of range [3] with length 3" type="panicked"><![CDATA[rule: section 9.9
]]></error>
  </testcase>
  <testcase name="ERR.2" classname="gwconform.ERR.2" status="interrupted" time="0.003">
   <error message="interrupted by user" type="interrupted"><![CDATA[rule: section 9.9
]]></error>
  </testcase>
  <testcase name="HDR.1" classname="gwconform.HDR.1" status="skipped" time="0.003">
   <skipped message="SHOULD check failed (the run fails on it only with --fail-on should): no Content-Type"></skipped>
   <properties>
    <property name="check.outcome" value="failed"/>
   </properties>
   <system-err><![CDATA[rule: section 9.9
exchange 1: the same request and answer as CMD.1.JSON#3
reproduce: gwconform replay report.json HDR.1
]]></system-err>
  </testcase>
  <testcase name="INFO.CT.1" classname="gwconform.INFO.CT" status="skipped" time="0.003">
   <skipped message="INFO check could not complete (INFO never fails a run): could not read the answer"></skipped>
   <properties>
    <property name="check.outcome" value="failed"/>
   </properties>
   <system-err><![CDATA[rule: section 9.9
status 200 with text/plain	tabbed
]]></system-err>
  </testcase>
  <testcase name="SKIP.1" classname="gwconform.SKIP.1" status="skipped" time="0.003">
   <skipped message="skipped - the fleet has no Thermostat"></skipped>
  </testcase>
  <testcase name="PEND.1" classname="gwconform.PEND.1" status="pending" time="0.003">
   <skipped message="pending - not written yet"></skipped>
  </testcase>
  <testcase name="INC.1" classname="gwconform.INC.1" status="skipped" time="0.003">
   <skipped message="inconclusive: the observer did not answer"></skipped>
   <properties>
    <property name="check.outcome" value="inconclusive"/>
   </properties>
  </testcase>
  <testcase name="INC.2" classname="gwconform.INC.2" status="skipped" time="0.003">
   <skipped message="inconclusive - the state never settled"></skipped>
   <properties>
    <property name="check.outcome" value="inconclusive"/>
   </properties>
  </testcase>
  <testcase name="KNOWN.1" classname="gwconform.KNOWN.1" status="skipped" time="0.003">
   <skipped message="known failure (baseline): JIRA-12, until 2027-01-01"></skipped>
   <properties>
    <property name="check.outcome" value="expected_failure"/>
   </properties>
   <system-err><![CDATA[rule: section 9.9
exchange 1: the same request and answer as CMD.1.JSON#2
reproduce: gwconform replay report.json KNOWN.1
]]></system-err>
  </testcase>
  <testcase name="OK.1" classname="gwconform.OK.1" time="0"/>
  <testcase name="[BeforeSuite] the fleet loads" classname="gwconform" status="failed" time="1.5">
   <failure message="fleet.yaml: no such file" type="failed"><![CDATA[fleet.yaml: no such file]]></failure>
  </testcase>
  <testcase name="[gwconform.coverage] the run covers the whole interface" classname="gwconform" status="failed" time="0">
   <failure message="the run was PARTIAL: not covered: device type Thermostat: the fleet has none (40 checks not run); format xml: filtered" type="failed"><![CDATA[the run was PARTIAL: not covered: device type Thermostat: the fleet has none (40 checks not run); format xml: filtered]]></failure>
  </testcase>
 </testsuite>
</testsuites>
`,
	"every-outcome-fail-on-should-allow-partial": `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="14" disabled="1" errors="2" failures="4" time="12.345678">
 <testsuite name="gwconform" tests="14" disabled="1" skipped="6" errors="2" failures="4" time="12.345678" timestamp="2026-01-02T02:04:05">
  <properties>
   <property name="gwconform.verdict" value="PARTIAL"/>
   <property name="gwconform.target" value="https://gw.example:8443/base (observer http://127.0.0.1:9)"/>
   <property name="gwconform.seed" value="-17"/>
   <property name="gwconform.harness_version" value="1.2.3"/>
   <property name="gwconform.catalog_version" value="2026.11.10"/>
   <property name="gwconform.catalog_hash" value="f00d"/>
   <property name="gwconform.inconclusive" value="2"/>
   <property name="gwconform.label_filter" value="level:MUST &amp;&amp; !sim"/>
   <property name="gwconform.effects" value="effects not observed: no observer"/>
   <property name="gwconform.stopped" value="the target stopped answering"/>
   <property name="gwconform.suite_failure.1" value="Interrupted by User"/>
   <property name="gwconform.suite_failure.2" value="Detected 1 Programmatic Focus"/>
   <property name="gwconform.not_covered.1" value="device type Thermostat: the fleet has none (40 checks not run)"/>
   <property name="gwconform.not_covered.2" value="format xml: filtered"/>
  </properties>
  <testcase name="CMD.1.JSON" classname="gwconform.CMD.1" status="failed" time="0.003">
   <failure message="Expected&#xA;    &lt;int&gt;: 500&#xA;to equal&#xA;    &lt;int&gt;: 200" type="failed"><![CDATA[expected: the answer is {"status":"success"}
rule: section 9.9; CONTRACT 3; rule API-2.3.status
the observer showed name "Hall"
exchange 1: POST http://127.0.0.1:8080/v1/services/gateway/command
> {"api_key":"demo…","mac":"a4c138f0e2b1","type":"Thermostat","note":"a ]]]]><![CDATA[> inside"}
< 500 <xml><status>error</status><message>bad�byte & "quotes"</message></xml>
exchange 2: GET http://127.0.0.1:8080/v1/devices?x=1&y=2
< no answer: read tcp: connection reset by peer
exchange 3: POST http://127.0.0.1:8080/v1/services/gateway/command
> {"a":"b"}
< 400 {"status":"error","message":"ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé… (831 bytes in all: report.json has it whole)
reproduce: gwconform replay report.json CMD.1.JSON
]]></failure>
  </testcase>
  <testcase name="CMD.1.JSON.contract" classname="gwconform.CMD.1" status="failed" time="0.003">
   <failure message="status 500, want 200" type="failed"><![CDATA[rule: section 9.9
exchange 1: the same request and answer as CMD.1.JSON#1
reproduce: gwconform replay report.json CMD.1.JSON.contract
]]></failure>
  </testcase>
  <testcase name="ERR.1" classname="gwconform.ERR.1" status="panicked" time="0.003">
   <error message="Test Panicked&#xA;runtime error: index out of range [3] with length 3" type="panicked"><![CDATA[rule: section 9.9
]]></error>
  </testcase>
  <testcase name="ERR.2" classname="gwconform.ERR.2" status="interrupted" time="0.003">
   <error message="interrupted by user" type="interrupted"><![CDATA[rule: section 9.9
]]></error>
  </testcase>
  <testcase name="HDR.1" classname="gwconform.HDR.1" status="failed" time="0.003">
   <failure message="no Content-Type" type="failed"><![CDATA[rule: section 9.9
exchange 1: the same request and answer as CMD.1.JSON#3
reproduce: gwconform replay report.json HDR.1
]]></failure>
  </testcase>
  <testcase name="INFO.CT.1" classname="gwconform.INFO.CT" status="skipped" time="0.003">
   <skipped message="INFO check could not complete (INFO never fails a run): could not read the answer"></skipped>
   <properties>
    <property name="check.outcome" value="failed"/>
   </properties>
   <system-err><![CDATA[rule: section 9.9
status 200 with text/plain	tabbed
]]></system-err>
  </testcase>
  <testcase name="SKIP.1" classname="gwconform.SKIP.1" status="skipped" time="0.003">
   <skipped message="skipped - the fleet has no Thermostat"></skipped>
  </testcase>
  <testcase name="PEND.1" classname="gwconform.PEND.1" status="pending" time="0.003">
   <skipped message="pending - not written yet"></skipped>
  </testcase>
  <testcase name="INC.1" classname="gwconform.INC.1" status="skipped" time="0.003">
   <skipped message="inconclusive: the observer did not answer"></skipped>
   <properties>
    <property name="check.outcome" value="inconclusive"/>
   </properties>
  </testcase>
  <testcase name="INC.2" classname="gwconform.INC.2" status="skipped" time="0.003">
   <skipped message="inconclusive - the state never settled"></skipped>
   <properties>
    <property name="check.outcome" value="inconclusive"/>
   </properties>
  </testcase>
  <testcase name="KNOWN.1" classname="gwconform.KNOWN.1" status="skipped" time="0.003">
   <skipped message="known failure (baseline): JIRA-12, until 2027-01-01"></skipped>
   <properties>
    <property name="check.outcome" value="expected_failure"/>
   </properties>
   <system-err><![CDATA[rule: section 9.9
exchange 1: the same request and answer as CMD.1.JSON#2
reproduce: gwconform replay report.json KNOWN.1
]]></system-err>
  </testcase>
  <testcase name="OK.1" classname="gwconform.OK.1" time="0"/>
  <testcase name="[BeforeSuite] the fleet loads" classname="gwconform" status="failed" time="1.5">
   <failure message="fleet.yaml: no such file" type="failed"><![CDATA[fleet.yaml: no such file]]></failure>
  </testcase>
  <testcase name="[gwconform.coverage] the run covers the whole interface" classname="gwconform" status="skipped" time="0">
   <skipped message="the run was PARTIAL: not covered: device type Thermostat: the fleet has none (40 checks not run); format xml: filtered (allowed by --allow-partial)"></skipped>
  </testcase>
 </testsuite>
</testsuites>
`,
	"exit": `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4" disabled="0" errors="0" failures="1" time="0">
 <testsuite name="gwconform" tests="4" disabled="0" skipped="2" errors="0" failures="1" time="0">
  <properties>
   <property name="gwconform.verdict" value="PARTIAL"/>
   <property name="gwconform.target" value="x"/>
   <property name="gwconform.seed" value="0"/>
   <property name="gwconform.harness_version" value=""/>
   <property name="gwconform.catalog_version" value=""/>
   <property name="gwconform.catalog_hash" value=""/>
   <property name="gwconform.inconclusive" value="0"/>
   <property name="gwconform.not_covered.1" value="checks skipped: the fleet has no Thermostat (1 checks not run)"/>
   <property name="gwconform.not_covered.2" value="device type Thermostat: no check of it ran: the fleet has no Thermostat (1 checks not run)"/>
  </properties>
  <testcase name="J.1" classname="gwconform.J.1" time="0.001"/>
  <testcase name="J.2" classname="gwconform.J.2" status="skipped" time="0.001">
   <skipped message="SHOULD check failed (the run fails on it only with --fail-on should): status 422, want 400"></skipped>
   <properties>
    <property name="check.outcome" value="failed"/>
   </properties>
   <system-err><![CDATA[rule: section 9.9
]]></system-err>
  </testcase>
  <testcase name="J.3" classname="gwconform.J.3" status="skipped" time="0.001">
   <skipped message="skipped - the fleet has no Thermostat"></skipped>
  </testcase>
  <testcase name="[gwconform.coverage] the run covers the whole interface" classname="gwconform" status="failed" time="0">
   <failure message="the run was PARTIAL: not covered: checks skipped: the fleet has no Thermostat (1 checks not run); device type Thermostat: no check of it ran: the fleet has no Thermostat (1 checks not run)" type="failed"><![CDATA[the run was PARTIAL: not covered: checks skipped: the fleet has no Thermostat (1 checks not run); device type Thermostat: no check of it ran: the fleet has no Thermostat (1 checks not run)]]></failure>
  </testcase>
 </testsuite>
</testsuites>
`,
	"exit-allow-partial": `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4" disabled="0" errors="0" failures="0" time="0">
 <testsuite name="gwconform" tests="4" disabled="0" skipped="3" errors="0" failures="0" time="0">
  <properties>
   <property name="gwconform.verdict" value="PARTIAL"/>
   <property name="gwconform.target" value="x"/>
   <property name="gwconform.seed" value="0"/>
   <property name="gwconform.harness_version" value=""/>
   <property name="gwconform.catalog_version" value=""/>
   <property name="gwconform.catalog_hash" value=""/>
   <property name="gwconform.inconclusive" value="0"/>
   <property name="gwconform.not_covered.1" value="checks skipped: the fleet has no Thermostat (1 checks not run)"/>
   <property name="gwconform.not_covered.2" value="device type Thermostat: no check of it ran: the fleet has no Thermostat (1 checks not run)"/>
  </properties>
  <testcase name="J.1" classname="gwconform.J.1" time="0.001"/>
  <testcase name="J.2" classname="gwconform.J.2" status="skipped" time="0.001">
   <skipped message="SHOULD check failed (the run fails on it only with --fail-on should): status 422, want 400"></skipped>
   <properties>
    <property name="check.outcome" value="failed"/>
   </properties>
   <system-err><![CDATA[rule: section 9.9
]]></system-err>
  </testcase>
  <testcase name="J.3" classname="gwconform.J.3" status="skipped" time="0.001">
   <skipped message="skipped - the fleet has no Thermostat"></skipped>
  </testcase>
  <testcase name="[gwconform.coverage] the run covers the whole interface" classname="gwconform" status="skipped" time="0">
   <skipped message="the run was PARTIAL: not covered: checks skipped: the fleet has no Thermostat (1 checks not run); device type Thermostat: no check of it ran: the fleet has no Thermostat (1 checks not run) (allowed by --allow-partial)"></skipped>
  </testcase>
 </testsuite>
</testsuites>
`,
	"exit-fail-on-should": `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" disabled="0" errors="0" failures="1" time="0">
 <testsuite name="gwconform" tests="3" disabled="0" skipped="1" errors="0" failures="1" time="0">
  <properties>
   <property name="gwconform.verdict" value="FAIL"/>
   <property name="gwconform.target" value="x"/>
   <property name="gwconform.seed" value="0"/>
   <property name="gwconform.harness_version" value=""/>
   <property name="gwconform.catalog_version" value=""/>
   <property name="gwconform.catalog_hash" value=""/>
   <property name="gwconform.inconclusive" value="0"/>
   <property name="gwconform.not_covered.1" value="checks skipped: the fleet has no Thermostat (1 checks not run)"/>
   <property name="gwconform.not_covered.2" value="device type Thermostat: no check of it ran: the fleet has no Thermostat (1 checks not run)"/>
  </properties>
  <testcase name="J.1" classname="gwconform.J.1" time="0.001"/>
  <testcase name="J.2" classname="gwconform.J.2" status="failed" time="0.001">
   <failure message="status 422, want 400" type="failed"><![CDATA[rule: section 9.9
]]></failure>
  </testcase>
  <testcase name="J.3" classname="gwconform.J.3" status="skipped" time="0.001">
   <skipped message="skipped - the fleet has no Thermostat"></skipped>
  </testcase>
 </testsuite>
</testsuites>
`,
	"exit-fail-on-should-allow-partial": `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" disabled="0" errors="0" failures="1" time="0">
 <testsuite name="gwconform" tests="3" disabled="0" skipped="1" errors="0" failures="1" time="0">
  <properties>
   <property name="gwconform.verdict" value="FAIL"/>
   <property name="gwconform.target" value="x"/>
   <property name="gwconform.seed" value="0"/>
   <property name="gwconform.harness_version" value=""/>
   <property name="gwconform.catalog_version" value=""/>
   <property name="gwconform.catalog_hash" value=""/>
   <property name="gwconform.inconclusive" value="0"/>
   <property name="gwconform.not_covered.1" value="checks skipped: the fleet has no Thermostat (1 checks not run)"/>
   <property name="gwconform.not_covered.2" value="device type Thermostat: no check of it ran: the fleet has no Thermostat (1 checks not run)"/>
  </properties>
  <testcase name="J.1" classname="gwconform.J.1" time="0.001"/>
  <testcase name="J.2" classname="gwconform.J.2" status="failed" time="0.001">
   <failure message="status 422, want 400" type="failed"><![CDATA[rule: section 9.9
]]></failure>
  </testcase>
  <testcase name="J.3" classname="gwconform.J.3" status="skipped" time="0.001">
   <skipped message="skipped - the fleet has no Thermostat"></skipped>
  </testcase>
 </testsuite>
</testsuites>
`,
	"run": `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" disabled="0" errors="0" failures="1" time="0">
 <testsuite name="gwconform" tests="3" disabled="0" skipped="1" errors="0" failures="1" time="0">
  <properties>
   <property name="gwconform.verdict" value="FAIL"/>
   <property name="gwconform.target" value="https://gw.example:8443/base"/>
   <property name="gwconform.seed" value="42"/>
   <property name="gwconform.harness_version" value="9.9.9"/>
   <property name="gwconform.catalog_version" value="2026.1.1"/>
   <property name="gwconform.catalog_hash" value="abc123"/>
   <property name="gwconform.inconclusive" value="0"/>
   <property name="gwconform.not_covered.1" value="checks skipped: the fleet has no Thermostat (1 checks not run)"/>
   <property name="gwconform.not_covered.2" value="device type Thermostat: no check of it ran: the fleet has no Thermostat (1 checks not run)"/>
  </properties>
  <testcase name="U.1" classname="gwconform.U.1" time="0.001"/>
  <testcase name="U.2" classname="gwconform.U.2" status="failed" time="0.001">
   <failure message="status 500 &amp; &lt;no body&gt;, want 400" type="failed"><![CDATA[rule: section 9.9
]]></failure>
  </testcase>
  <testcase name="U.3" classname="gwconform.U.3" status="skipped" time="0.001">
   <skipped message="skipped - the fleet has no Thermostat"></skipped>
  </testcase>
 </testsuite>
</testsuites>
`,
}
