package main

import (
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// No plain PASS with MUST checks unrun: a faithful target that does not
// answer the reads of CONTRACT 7, run as the CI recipe once ran it (no
// --observer), skips the MUST effect checks; the run is PARTIAL, exits 1
// and names them and the two flags. With --no-observer it passes, exit 0,
// and its verdict names the MUST checks it left out; with --observer it
// passes with nothing left out.
func TestNoObserverIsNoPlainPass(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	api, reads := faithfulDouble(t)
	fleetFile := indepFleetFile(t, indepKey, indepSecret)
	base := []string{"--target", api, "--fleet", fleetFile}

	r := gwconform(t, base...)
	verdict := lineWith(r.stdout, "Conformance of ")
	if r.code != 1 || !strings.Contains(verdict, "PARTIAL") {
		t.Fatalf("no observer: exit %d, %q; want 1 and PARTIAL\n%s", r.code, verdict, tail(r.stdout))
	}
	if !strings.Contains(r.stdout, "these MUST checks need an observer: give --observer URL, or --no-observer") {
		t.Errorf("no observer: the summary does not say what was left out and which flag accepts it:\n%s", tail(r.stdout))
	}
	d := readIndepDoc(t, r.dir)
	if d.Verdict != "PARTIAL" {
		t.Errorf("report.json verdict %s", d.Verdict)
	}

	r = gwconform(t, append(base, "--no-observer")...)
	verdict = lineWith(r.stdout, "Conformance of ")
	if r.code != 0 || !strings.Contains(verdict, "PASS") || !strings.Contains(verdict, "MUST effect checks not run: no observer (--no-observer)") {
		t.Errorf("--no-observer: exit %d, %q; want 0 and a PASS that names the MUST checks left out\n%s", r.code, verdict, tail(r.stdout))
	}

	r = gwconform(t, append(base, "--observer", reads)...)
	verdict = lineWith(r.stdout, "Conformance of ")
	if r.code != 0 || !strings.Contains(verdict, "PASS") || strings.Contains(verdict, "not run") {
		t.Errorf("--observer: exit %d, %q; want 0 and a plain PASS\n%s", r.code, verdict, tail(r.stdout))
	}
}

// lineWith is the first line of out that contains s ("" when none).
func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
