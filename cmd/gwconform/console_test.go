package main

import (
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestConsoleForPeopleAndCILogs: off a terminal each failure is printed
// once, as one block (check ID, level, rule, expected, got, report path),
// with no Ginkgo decoration and no source path (in report.json neither);
// the skipped checks' reasons are counted; the bundle's console.log is
// what the console showed; a baselined failure shows once, as known.
func TestConsoleForPeopleAndCILogs(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
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
		block := regexp.MustCompile(`(?m)^FAILED MUST   \[` + regexp.QuoteMeta(id) + `\]\n  title:    .+\n  rule:     section 2\.3 .+\n  expected: .+MUST NOT be answered with success\..*\n  got:      an invalid request was accepted: HTTP 200, status success\n  report:   .+report\.html#c-`)
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
	for _, name := range []string{"report.json", "junit.xml"} {
		b, _ := os.ReadFile(filepath.Join(r.dir, name))
		if m := regexp.MustCompile(`[\w/.-]+\.go:\d+`).Find(b); m != nil {
			t.Errorf("%s names a source file: %s", name, m)
		}
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

// TestSummaryOnItsOwnLineOnATerminal: on a terminal the progress line is
// rewritten in place and wiped before the summary, which starts at the
// beginning of a line of its own; the verdict is in colour.
func TestSummaryOnItsOwnLineOnATerminal(t *testing.T) {
	t.Parallel()
	script, err := exec.LookPath("script")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("script (util-linux) is missing: it gives the run a terminal")
		}
		t.Skip("script (util-linux) not installed")
	}
	dir := t.TempDir()
	typescript := filepath.Join(dir, "typescript")
	cmd := exec.Command(script, "-qec", bins.gwconform+" run --check 'command.light-dimmer.*' --rate 100 --allow-partial --report-dir "+filepath.Join(dir, "r"), typescript)
	cmd.Env = append(os.Environ(), "TERM=xterm")
	cmd.Env = slices.DeleteFunc(cmd.Env, func(e string) bool { return strings.HasPrefix(e, "NO_COLOR=") })
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(typescript)
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	i := strings.Index(out, "Conformance of")
	if i < 0 {
		t.Fatalf("no summary:\n%q", out)
	}
	// What a terminal shows before the summary on its line: after the last
	// carriage return, the progress line wiped (ESC [K), then nothing.
	seg := out[strings.LastIndex(out[:i], "\n")+1 : i]
	if j := strings.LastIndex(seg, "\r"); j >= 0 {
		seg = seg[j+1:]
		if !strings.HasPrefix(seg, "\x1b[K") {
			t.Errorf("the progress line is not wiped before the summary:\n%q", out)
		}
	}
	if before := strings.ReplaceAll(seg, "\x1b[K", ""); before != "" {
		t.Errorf("the summary shares its line with %q:\n%q", before, out)
	}
	// (--rate 100 makes the run last a few seconds: the line is shown.)
	if !regexp.MustCompile(`\r\x1b\[Kgwconform: \d+/\d+ checks done, `).MatchString(out) {
		t.Errorf("no progress line rewritten in place:\n%q", out)
	}
	if !strings.Contains(out, "\x1b[1;33mPARTIAL\x1b[0m") {
		t.Errorf("no colour on a terminal:\n%q", out)
	}
	if strings.Contains(out, "•") {
		t.Errorf("Ginkgo's dots on a terminal:\n%q", out)
	}
}
