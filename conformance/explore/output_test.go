package explore

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/junit"
)

func TestReportsCarryTheSeedAndTheSequence(t *testing.T) {
	op := Op{Kind: Rename, Format: "xml", Account: "5f3a9c0e1b2d4f6a8c0e1b2d", Key: "demo-key", MAC: "a4c138f0e2b1",
		SN: "0123456789abcdef0123456789abcd06", Fields: []KV{{Key: "name", Value: "Garage <Door> & Co"}}, Note: "valid"}
	read := Op{Kind: ReadDevice, MAC: op.MAC, SN: op.SN}
	rep := &Report{Seed: 4242, Target: "http://127.0.0.1:1", Observer: "http://127.0.0.1:1", Operations: 10, Rounds: 1,
		Found: &Finding{Kind: "disagreement", Original: 10, Ops: []Op{op, read}, Devices: 1, Reproducible: true,
			Steps: []Step{{Op: op, Expected: "200 success", Got: "200 success", Curl: "curl -sS 'x'"},
				{Op: read, Expected: `name="Garage <Door> & Co" {}`, Got: `name="Hall" {}`, Disagrees: true, Why: `name "Hall", want "Garage <Door> & Co"`}},
			Disagreement: &Disagreement{Index: 1, Op: read, Why: `name "Hall", want "Garage <Door> & Co"`}}}
	dir := t.TempDir()
	if err := WriteReports(dir, rep, true); err != nil {
		t.Fatal(err)
	}
	var suites junit.Suites
	b, _ := os.ReadFile(filepath.Join(dir, JUnitName))
	if err := xml.Unmarshal(b, &suites); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, b)
	}
	s := suites.Suites[0]
	if s.Failures != 1 || s.Cases[0].Failure == nil || !strings.Contains(s.Cases[0].Failure.Message, "Garage <Door>") || s.Properties[0].Value != "4242" {
		t.Errorf("JUnit: %+v", s)
	}
	h, _ := os.ReadFile(filepath.Join(dir, HTMLName))
	if !strings.Contains(string(h), "4242") || !strings.Contains(string(h), "Garage &lt;Door&gt; &amp; Co") || strings.Contains(string(h), "<Door>") {
		t.Errorf("HTML does not show the seed and the escaped sequence:\n%s", h)
	}
	f, err := ReadFile(filepath.Join(dir, JSONName))
	if err != nil || f.Seed != 4242 || len(f.Found.Ops) != 2 || f.Found.Ops[0].Fields[0].Value != "Garage <Door> & Co" || !f.Reset {
		t.Errorf("explore.json: %+v %v", f, err)
	}
	sh, _ := os.ReadFile(filepath.Join(dir, ScriptName))
	if !strings.HasPrefix(string(sh), "#!/bin/sh") || !strings.Contains(string(sh), "_sim/reset") || !strings.Contains(string(sh), "seed 4242") {
		t.Errorf("script:\n%s", sh)
	}
}

// TestJUnitBytes: explore-junit.xml is, byte for byte, the file below for
// each report: TestReportsCarryTheSeedAndTheSequence's finding (with two
// more disagreements that did not stop the run, one known), a
// linearizability finding, and a run that found nothing. A change to the
// JUnit model or its encoding that moves a byte shows here.
func TestJUnitBytes(t *testing.T) {
	op := Op{Kind: Rename, Format: "xml", Account: "5f3a9c0e1b2d4f6a8c0e1b2d", Key: "demo-key", MAC: "a4c138f0e2b1",
		SN: "0123456789abcdef0123456789abcd06", Fields: []KV{{Key: "name", Value: "Garage <Door> & Co"}}, Note: "valid"}
	read := Op{Kind: ReadDevice, MAC: op.MAC, SN: op.SN}
	found := &Finding{Kind: "disagreement", Judgement: Judgement{Level: MUST, Rule: "API-2.3.update_name", Quote: `API 2.3 (MUST): "the name is stored"`},
		Count: 1, Original: 10, Ops: []Op{op, read}, Devices: 1, Reproducible: true,
		Steps: []Step{{Op: op, Expected: "200 success", Got: "200 success", Curl: "curl -sS 'x'"},
			{Op: read, Expected: `name="Garage <Door> & Co" {}`, Got: `name="Hall" {}`, Disagrees: true, Why: `name "Hall", want "Garage <Door> & Co"`}},
		Disagreement: &Disagreement{Index: 1, Op: read, Why: "name \"Hall\",\nwant \"Garage <Door> & Co\""}}
	should := &Finding{Kind: "disagreement", Judgement: Judgement{Level: SHOULD, Rule: "CONTRACT-4.content-type", Quote: "CONTRACT 4 (SHOULD): 'the answer's media type is the request's'"},
		Count: 3, Original: 4, Ops: []Op{read}, Steps: []Step{{Op: read, Expected: "json", Got: "text/plain", Disagrees: true}},
		Disagreement: &Disagreement{Index: 0, Op: read, Why: "answered as text/plain"}}
	known := &Finding{Kind: "disagreement", Judgement: Judgement{Level: MUST, Rule: "C-3.rejected-changes-nothing"}, Count: 2, Known: "JIRA-7",
		Ops: []Op{op}, Steps: []Step{{Op: op, Expected: "400", Got: "200", Disagrees: true}}, Disagreement: &Disagreement{Op: op, Why: "accepted"}}
	reports := map[string]*Report{
		"found": {Seed: 4242, Target: "http://127.0.0.1:1", Observer: "http://127.0.0.1:1", Operations: 10, Rounds: 1, Elapsed: "1.5s", OpsPerSec: 6.7,
			FailOn: SHOULD, Found: found, Findings: []*Finding{should, found, known}, Skipped: map[string]int{"CONTRACT-9.x": 2}, Notes: []string{"effects not observed"}},
		"linearizability": {Seed: -3, Target: "http://127.0.0.1:1", Observer: "http://127.0.0.1:2", Clients: 3, Operations: 40, Rounds: 2, Elapsed: "2s", OpsPerSec: 20, FailOn: MUST,
			Found: &Finding{Kind: "linearizability", Judgement: Judgement{Level: MUST, Rule: "linearizability"}, Original: 12, Ops: []Op{op, read}, Devices: 1, ShrinkRuns: 5, ShrinkTime: "1s",
				History: []string{"client 0: rename -> 200", "client 1: read -> name=\"Hall\""}, Picture: "explore-linearizability.html"}},
		"pass": {Seed: 1, Target: "http://127.0.0.1:1", Operations: 100, Rounds: 10, Elapsed: "3s", OpsPerSec: 33.3, FailOn: MUST},
	}
	for name, rep := range reports {
		rep.Found.setFindings(rep)
		dir := t.TempDir()
		if err := WriteReports(dir, rep, true); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, JUnitName))
		if err != nil {
			t.Fatal(err)
		}
		if want, ok := wantJUnit[name]; !ok || string(b) != want {
			t.Errorf("%s: explore-junit.xml differs from the file below (or there is none):\n%s", name, b)
		}
	}
}

// setFindings puts a finding that stopped the run among its report's
// findings, as the explorer does, when they do not list it.
func (f *Finding) setFindings(rep *Report) {
	if f == nil {
		return
	}
	for _, g := range rep.Findings {
		if g == f {
			return
		}
	}
	rep.Findings = append(rep.Findings, f)
}

// wantJUnit are the files TestJUnitBytes writes, by report.
var wantJUnit = map[string]string{
	"found": `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="gwconform explore" tests="3" failures="2">
    <properties>
      <property name="seed" value="4242"></property>
      <property name="target" value="http://127.0.0.1:1"></property>
      <property name="observer" value="http://127.0.0.1:1"></property>
      <property name="operations" value="10"></property>
      <property name="clients" value="0"></property>
    </properties>
    <testcase name="explore seed 4242" classname="gwconform.explore">
      <failure message="name &#34;Hall&#34;, want &#34;Garage &lt;Door&gt; &amp; Co&#34;" type="disagreement">note: effects not observed&#xA;explore: seed 4242, 10 operations in 1 sequences against http://127.0.0.1:1 in 1.5s (7 operations/s)&#xA;2 distinct disagreement(s) that did not stop the run (--fail-on should):&#xA;  1. SHOULD CONTRACT-4.content-type, 3 time(s): answered as text/plain&#xA;     CONTRACT 4 (SHOULD): &#39;the answer&#39;s media type is the request&#39;s&#39;&#xA;     shrunk to 1 operation(s), last: read device a4c138f0e2b1/0123456789abcdef0123456789abcd06; reproduce: sh explore-repro-1.sh&#xA;  2. MUST C-3.rejected-changes-nothing, 2 time(s): accepted — known failure (baseline): JIRA-7&#xA;     &#xA;     shrunk to 1 operation(s), last: rename xml a4c138f0e2b1/0123456789abcdef0123456789abcd06 name=&#34;Garage &lt;Door&gt; &amp; Co&#34;; reproduce: sh explore-repro-3.sh&#xA;skipped: 2 disagreement(s) of rule CONTRACT-9.x (--skip)&#xA;shrunk 10 operations to 2 on 1 device(s) in 0 runs ():&#xA;   1. rename xml a4c138f0e2b1/0123456789abcdef0123456789abcd06 name=&#34;Garage &lt;Door&gt; &amp; Co&#34;&#xA;       expected 200 success&#xA;       got      200 success&#xA;!  2. read device a4c138f0e2b1/0123456789abcdef0123456789abcd06&#xA;       expected name=&#34;Garage &lt;Door&gt; &amp; Co&#34; {}&#xA;       got      name=&#34;Hall&#34; {}&#xA;MUST, rule API-2.3.update_name: API 2.3 (MUST): &#34;the name is stored&#34;&#xA;FAIL: the target and the model disagree at operation 2: name &#34;Hall&#34;,&#xA;want &#34;Garage &lt;Door&gt; &amp; Co&#34; (seed 4242)&#xA;</failure>
      <system-out>note: effects not observed&#xA;explore: seed 4242, 10 operations in 1 sequences against http://127.0.0.1:1 in 1.5s (7 operations/s)&#xA;2 distinct disagreement(s) that did not stop the run (--fail-on should):&#xA;  1. SHOULD CONTRACT-4.content-type, 3 time(s): answered as text/plain&#xA;     CONTRACT 4 (SHOULD): &#39;the answer&#39;s media type is the request&#39;s&#39;&#xA;     shrunk to 1 operation(s), last: read device a4c138f0e2b1/0123456789abcdef0123456789abcd06; reproduce: sh explore-repro-1.sh&#xA;  2. MUST C-3.rejected-changes-nothing, 2 time(s): accepted — known failure (baseline): JIRA-7&#xA;     &#xA;     shrunk to 1 operation(s), last: rename xml a4c138f0e2b1/0123456789abcdef0123456789abcd06 name=&#34;Garage &lt;Door&gt; &amp; Co&#34;; reproduce: sh explore-repro-3.sh&#xA;skipped: 2 disagreement(s) of rule CONTRACT-9.x (--skip)&#xA;shrunk 10 operations to 2 on 1 device(s) in 0 runs ():&#xA;   1. rename xml a4c138f0e2b1/0123456789abcdef0123456789abcd06 name=&#34;Garage &lt;Door&gt; &amp; Co&#34;&#xA;       expected 200 success&#xA;       got      200 success&#xA;!  2. read device a4c138f0e2b1/0123456789abcdef0123456789abcd06&#xA;       expected name=&#34;Garage &lt;Door&gt; &amp; Co&#34; {}&#xA;       got      name=&#34;Hall&#34; {}&#xA;MUST, rule API-2.3.update_name: API 2.3 (MUST): &#34;the name is stored&#34;&#xA;FAIL: the target and the model disagree at operation 2: name &#34;Hall&#34;,&#xA;want &#34;Garage &lt;Door&gt; &amp; Co&#34; (seed 4242)&#xA;</system-out>
    </testcase>
    <testcase name="explore finding 1: SHOULD CONTRACT-4.content-type" classname="gwconform.explore">
      <failure message="answered as text/plain" type="SHOULD">answered as text/plain&#xA;CONTRACT 4 (SHOULD): &#39;the answer&#39;s media type is the request&#39;s&#39;&#xA;seen 3 time(s); shrunk to 1 operation(s); explore-repro-1.sh</failure>
      <system-out>answered as text/plain&#xA;CONTRACT 4 (SHOULD): &#39;the answer&#39;s media type is the request&#39;s&#39;&#xA;seen 3 time(s); shrunk to 1 operation(s); explore-repro-1.sh</system-out>
    </testcase>
    <testcase name="explore finding 3: MUST C-3.rejected-changes-nothing" classname="gwconform.explore">
      <system-out>accepted&#xA;&#xA;seen 2 time(s); shrunk to 1 operation(s); explore-repro-3.sh</system-out>
    </testcase>
  </testsuite>
</testsuites>
`,
	"linearizability": `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="gwconform explore" tests="1" failures="1">
    <properties>
      <property name="seed" value="-3"></property>
      <property name="target" value="http://127.0.0.1:1"></property>
      <property name="observer" value="http://127.0.0.1:2"></property>
      <property name="operations" value="40"></property>
      <property name="clients" value="3"></property>
    </properties>
    <testcase name="explore seed -3" classname="gwconform.explore">
      <failure message="a concurrent history is not linearizable" type="linearizability">explore: seed -3, 40 operations in 2 sequences against http://127.0.0.1:1 in 2s (20 operations/s)&#xA;shrunk 12 operations to 2 on 1 device(s) in 5 runs (1s) — NOT reproduced when run again: the bug may be timing-dependent:&#xA;   1. rename xml a4c138f0e2b1/0123456789abcdef0123456789abcd06 name=&#34;Garage &lt;Door&gt; &amp; Co&#34;&#xA;   2. read device a4c138f0e2b1/0123456789abcdef0123456789abcd06&#xA;  client 0: rename -&gt; 200&#xA;  client 1: read -&gt; name=&#34;Hall&#34;&#xA;Porcupine&#39;s picture of the history: explore-linearizability.html&#xA;MUST, rule linearizability: &#xA;FAIL: a concurrent history is not linearizable (seed -3)&#xA;</failure>
      <system-out>explore: seed -3, 40 operations in 2 sequences against http://127.0.0.1:1 in 2s (20 operations/s)&#xA;shrunk 12 operations to 2 on 1 device(s) in 5 runs (1s) — NOT reproduced when run again: the bug may be timing-dependent:&#xA;   1. rename xml a4c138f0e2b1/0123456789abcdef0123456789abcd06 name=&#34;Garage &lt;Door&gt; &amp; Co&#34;&#xA;   2. read device a4c138f0e2b1/0123456789abcdef0123456789abcd06&#xA;  client 0: rename -&gt; 200&#xA;  client 1: read -&gt; name=&#34;Hall&#34;&#xA;Porcupine&#39;s picture of the history: explore-linearizability.html&#xA;MUST, rule linearizability: &#xA;FAIL: a concurrent history is not linearizable (seed -3)&#xA;</system-out>
    </testcase>
  </testsuite>
</testsuites>
`,
	"pass": `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="gwconform explore" tests="1" failures="0">
    <properties>
      <property name="seed" value="1"></property>
      <property name="target" value="http://127.0.0.1:1"></property>
      <property name="observer" value=""></property>
      <property name="operations" value="100"></property>
      <property name="clients" value="0"></property>
    </properties>
    <testcase name="explore seed 1" classname="gwconform.explore">
      <system-out>explore: seed 1, 100 operations in 10 sequences against http://127.0.0.1:1 in 3s (33 operations/s)&#xA;PASS: the target agreed with the model on every answer and every observed state&#xA;</system-out>
    </testcase>
  </testsuite>
</testsuites>
`,
}
