package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance/report"
)

// TestConsoleEscapesTheTargetsBytes: a target whose error code carries
// ESC sequences (recolour the terminal, set its title) and a carriage
// return (hide what came before) cannot reach the terminal through
// gwconform run's console: every such byte is shown escaped, in the
// failure's block and in the one-line list alike, while the console's
// own colours stay.
func TestConsoleEscapesTheTargetsBytes(t *testing.T) {
	hostile := "answered 400 \x1b]0;pwned\x07\x1b[32mPASS\x1b[0m\rinvalid_field\u009b2J"
	var results []report.Result
	for i := range report.MaxListed + 2 {
		results = append(results, report.Result{ID: "x.y." + string(rune('a'+i)), Level: "MUST", Title: "t", Outcome: report.Failed,
			Failure: hostile + "\nsecond line \x1b[2K"})
	}
	d := report.Document{Target: "http://127.0.0.1:1", Verdict: report.VerdictFail, Results: results}
	var b bytes.Buffer
	report.WriteConsole(&b, d, report.ConsoleOptions{Color: true})
	out := b.String()
	for _, c := range []string{"\x07", "\r", "\u009b", "\x1b]", "\x1b[32m", "\x1b[2K"} {
		if strings.Contains(out, c) {
			t.Errorf("the console passes %q through:\n%s", c, out)
		}
	}
	if !strings.Contains(out, `\x1b]0;pwned\a\x1b[32mPASS\x1b[0m\rinvalid_field\u009b2J`) || !strings.Contains(out, `second line \x1b[2K`) {
		t.Errorf("the target's bytes are not shown escaped:\n%s", out)
	}
	if !strings.Contains(out, "\x1b[1;31m") {
		t.Error("the console's own colour is gone")
	}
}

// TestReportsReplacePlantedSymlinks: a symlink planted at junit.xml (or
// report.json, report.html) in the report folder, pointing at a file the
// planter wants overwritten, is replaced by the report; its target keeps
// its content.
func TestReportsReplacePlantedSymlinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)
	d := report.Document{Target: "http://127.0.0.1:1", Verdict: report.VerdictPass}
	for _, w := range report.Writers {
		p := filepath.Join(dir, w.File)
		if err := os.Symlink(victim, p); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(p, d, report.WriteOptions{Checks: fixtureCatalog()}); err != nil {
			t.Fatalf("%s: %v", w.File, err)
		}
		if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() {
			t.Errorf("%s is not a regular file after the write: %v", w.File, err)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("a report overwrote the symlink's target: %.80q", b)
	}
}
