package diff

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gwdmi/gwtools/conformance/explore"
)

// TestJUnitBytes: diff-junit.xml is, byte for byte, the file below for
// each report: TestReportsReplacePlantedSymlinks's difference with a
// second one beside it, and a comparison that found none. A change to the
// JUnit model or its encoding that moves a byte shows here.
func TestJUnitBytes(t *testing.T) {
	op := explore.Op{Kind: explore.Rename, Format: "json", Account: "5f3a9c0e1b2d4f6a8c0e1b2d", Key: "demo-key", MAC: "a4c138f0e2b1",
		SN: "0123456789abcdef0123456789abcd06", Fields: []explore.KV{{Key: "name", Value: "Hall"}}}
	read := explore.Op{Kind: explore.ReadDevice, MAC: op.MAC, SN: op.SN}
	reports := map[string]*Report{
		"different": {Seed: 7, A: "http://127.0.0.1:1", B: "http://127.0.0.1:2 (observer http://127.0.0.1:3)", Operations: 1, Rounds: 1, ReadOnly: true,
			Elapsed: "1s", OpsPerSec: 1,
			Differences: []*Difference{
				{Key: "k", Kind: "answer", Operation: "update_name", Verdict: "A", Count: 1, Ops: []explore.Op{op}},
				{Key: "k2", Kind: "state", Operation: "read_device", Judgement: explore.Judgement{Level: explore.MUST, Rule: "API-2.3.update_name", Quote: `API 2.3 (MUST): "the name is stored"`},
					Verdict: BothSides, VerdictWhy: "an Open form: the texts leave it", Count: 3, Original: 4, Ops: []explore.Op{op, read},
					A: Observation{Answer: "200 success", State: `name="Hall"`}, B: Observation{Answer: "400 error <field>", State: `name="Garage & Co"`}},
			}},
		"same": {Seed: -1, A: "http://127.0.0.1:1", B: "http://127.0.0.1:2", Operations: 50, Rounds: 5, Elapsed: "2s", OpsPerSec: 25, Reset: true,
			Notes: []string{"effects not observed on B"}, Ignored: []Ignored{{What: "the answer's Date", Why: "differs between two runs of A", Example: "Mon,\n2 Jan"}}},
	}
	for name, rep := range reports {
		dir := t.TempDir()
		if err := WriteReports(dir, rep); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, JUnitName))
		if err != nil {
			t.Fatal(err)
		}
		if want, ok := wantJUnit[name]; !ok || string(b) != want {
			t.Errorf("%s: diff-junit.xml differs from the file below (or there is none):\n%s", name, b)
		}
	}
}

// wantJUnit are the files TestJUnitBytes writes, by report.
var wantJUnit = map[string]string{
	"different": `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="gwconform diff" tests="2" failures="2">
    <properties>
      <property name="seed" value="7"></property>
      <property name="a" value="http://127.0.0.1:1"></property>
      <property name="b" value="http://127.0.0.1:2 (observer http://127.0.0.1:3)"></property>
      <property name="operations" value="1"></property>
      <property name="read_only" value="true"></property>
    </properties>
    <testcase name="difference 1:  update_name answer (1 time)" classname="gwconform.diff">
      <failure message="A  / B ; agrees with: A" type="A">A:  &#xA;B:  &#xA;the rule table agrees with: A ()&#xA;&#xA;shrunk sequence:&#xA;  1. rename json a4c138f0e2b1/0123456789abcdef0123456789abcd06 name=&#34;Hall&#34;&#xA;replay: sh diff-repro-1.sh&#xA;</failure>
    </testcase>
    <testcase name="difference 2: API-2.3.update_name read_device state (3 times)" classname="gwconform.diff">
      <failure message="A 200 successname=&#34;Hall&#34; / B 400 error &lt;field&gt;name=&#34;Garage &amp; Co&#34;; agrees with: both" type="both">A: 200 success name=&#34;Hall&#34;&#xA;B: 400 error &lt;field&gt; name=&#34;Garage &amp; Co&#34;&#xA;the rule table agrees with: both (an Open form: the texts leave it)&#xA;API 2.3 (MUST): &#34;the name is stored&#34;&#xA;shrunk sequence:&#xA;  1. rename json a4c138f0e2b1/0123456789abcdef0123456789abcd06 name=&#34;Hall&#34;&#xA;  2. read device a4c138f0e2b1/0123456789abcdef0123456789abcd06&#xA;replay: sh diff-repro-2.sh&#xA;</failure>
    </testcase>
  </testsuite>
</testsuites>
`,
	"same": `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="gwconform diff" tests="1" failures="0">
    <properties>
      <property name="seed" value="-1"></property>
      <property name="a" value="http://127.0.0.1:1"></property>
      <property name="b" value="http://127.0.0.1:2"></property>
      <property name="operations" value="50"></property>
      <property name="read_only" value="false"></property>
    </properties>
    <testcase name="no difference" classname="gwconform.diff">
      <system-out>note: effects not observed on B&#xA;ignored: the answer&#39;s Date: differs between two runs of A (e.g. Mon, 2 Jan)&#xA;diff: seed -1, 50 operations in 5 sequences compared in 2s (25/s)&#xA;  A: http://127.0.0.1:1&#xA;  B: http://127.0.0.1:2&#xA;SAME: no difference in answers or observed state&#xA;</system-out>
    </testcase>
  </testsuite>
</testsuites>
`,
}
