package explore

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance/junit"
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
