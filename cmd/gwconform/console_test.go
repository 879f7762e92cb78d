package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestConsoleForPeopleAndCILogs: off a terminal each failure is printed
// once, as one block (check ID, level, rule, expected, got, report path),
// with no Ginkgo decoration and no source path (in report.json neither);
// the skipped checks' reasons are counted; the bundle's console.log is
// what the console showed; a baselined failure shows once, as known.
func TestConsoleForPeopleAndCILogs(t *testing.T) {
	bad := acceptsDimming101(t)
	bundlePath := filepath.Join(t.TempDir(), "b.tar.gz")
	r := gwconform(t, "--target", bad, "--check", "command.light-dimmer.*", "--allow-partial", "--bundle", bundlePath)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	out := r.stdout
	for _, id := range []string{"command.light-dimmer.dimming.101.json", "command.light-dimmer.dimming.101.xml"} {
		if n := strings.Count(out, "["+id+"]"); n != 1 {
			t.Errorf("%s is printed %d times, want once:\n%s", id, n, out)
		}
		block := regexp.MustCompile(`(?m)^FAILED MUST   \[` + regexp.QuoteMeta(id) + `\]\n  title:    .+\n  rule:     section 2\.3 .+\n  expected: .+MUST NOT be answered with success\.\n  got:      an invalid request was accepted: HTTP 200, status success\n  report:   .+report\.html#c-`)
		if !block.MatchString(out) {
			t.Errorf("no failure block for %s:\n%s", id, out)
		}
	}
	for _, noise := range []string{"•", "------", "[FAILED]", ".go:", "Ran ", "FAIL!", "Summarizing"} {
		if strings.Contains(out, noise) {
			t.Errorf("the console shows %q:\n%s", noise, out)
		}
	}
	if !regexp.MustCompile(`(?m)^Skipped: \d+ checks\n +\d+  filtered out: not selected by the run's filter$`).MatchString(out) {
		t.Errorf("the summary does not count the skipped checks by reason:\n%s", out)
	}
	if !strings.Contains(out, "filter: the run was filtered (--check command.light-dimmer.*)") {
		t.Errorf("the filter is not named as given:\n%s", out)
	}
	rj, _ := os.ReadFile(filepath.Join(r.dir, "report.json"))
	if regexp.MustCompile(`\w+\.go:\d+`).Match(rj) {
		t.Errorf("report.json names a source file: %s", regexp.MustCompile(`[\w/]+\.go:\d+`).Find(rj))
	}
	if console := string(bundleFiles(t, bundlePath)["console.log"]); console != r.stdout+r.stderr {
		t.Errorf("console.log is not what the console showed:\n--- console.log\n%s\n--- console\n%s%s", console, r.stdout, r.stderr)
	}

	// With both failures baselined: each shows once, as known, and the run
	// passes with them.
	baseline := filepath.Join(t.TempDir(), "baseline.yaml")
	os.WriteFile(baseline, []byte(`entries:
  - {check: "command.light-dimmer.dimming.101.*", reason: accepted until v2.2, owner: firmware-team, expires: `+time.Now().AddDate(0, 0, 30).Format(time.DateOnly)+`}
`), 0o644)
	k := gwconform(t, "--target", bad, "--check", "command.light-dimmer.*", "--allow-partial", "--baseline", baseline)
	// (A filtered run is PARTIAL, baseline or not.)
	if k.code != 0 || strings.Contains(k.stdout, "FAILED") || !strings.Contains(k.stdout, ": PARTIAL (no MUST check failed, but the run was filtered)\n") {
		t.Errorf("baselined failures: exit %d\n%s", k.code, k.stdout)
	}
	for _, id := range []string{"command.light-dimmer.dimming.101.json", "command.light-dimmer.dimming.101.xml"} {
		if n := strings.Count(k.stdout, "["+id+"]"); n != 1 {
			t.Errorf("baselined %s is printed %d times, want once:\n%s", id, n, k.stdout)
		}
	}
	if !strings.Contains(k.stdout, "Known failures (expected by the baseline), not counted: 6") {
		t.Errorf("the baselined failures are not shown as known:\n%s", k.stdout)
	}
}

// TestMistypedFlagsAndTheSynopsis: a mistyped flag or command gets one
// line with a "did you mean"; run's synopsis lists every flag; a
// certified run with --check names --check.
func TestMistypedFlagsAndTheSynopsis(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--paralel", "3"}, `gwconform run: unknown flag --paralel (did you mean --parallel?); "gwconform run -h" lists every flag`},
		{[]string{"run", "--basline", "x"}, "(did you mean --baseline?)"},
		{[]string{"run", "--timeout", "soon"}, `gwconform run: invalid value "soon" for flag --timeout`},
		{[]string{"load", "--concurency", "3"}, "(did you mean --concurrency?)"},
		{[]string{"checks", "--levle", "MUST"}, "(did you mean --level?)"},
		{[]string{"rn"}, `gwconform: unknown command "rn" (did you mean run?)`},
		{[]string{"verfy", "x"}, "(did you mean verify?)"},
	} {
		code, out := command(t, tc.args...)
		if code != 2 || strings.Count(out, "\n") != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("gwconform %s: exit %d, want 2 and one line with %q:\n%s", strings.Join(tc.args, " "), code, tc.want, out)
		}
	}

	_, help := command(t, "run", "-h")
	synopsis, _, _ := strings.Cut(help, "\n\n")
	m := &runMain{Stdout: io.Discard, Stderr: io.Discard}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	m.opts.define(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !hiddenFlag(f) && !regexp.MustCompile(`\[-?-`+regexp.QuoteMeta(f.Name)+`[ \]=]`).MatchString(synopsis) {
			t.Errorf("run's synopsis does not list --%s:\n%s", f.Name, synopsis)
		}
	})

	cert := []string{"--bundle", filepath.Join(t.TempDir(), "b.tar.gz"), "--mode", "certified", "--product", "P", "--product-version", "1"}
	r := gwconform(t, append(cert, "--check", "command.*")...)
	if r.code != 2 || !strings.Contains(r.stderr, "drop --check") || strings.Contains(r.stderr, "ginkgo") {
		t.Errorf("--mode certified --check: exit %d\n%s", r.code, r.stderr)
	}
}
