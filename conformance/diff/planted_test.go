package diff

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gwdmi/gwtools/conformance/explore"
)

// TestReportsReplacePlantedSymlinks: a symlink planted at diff.json,
// diff.html, diff-junit.xml or a reproduction script's name, pointing at
// a file the planter wants overwritten, is replaced by the report; its
// target keeps its content.
func TestReportsReplacePlantedSymlinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	op := explore.Op{Kind: explore.Rename, Format: "json", Account: "5f3a9c0e1b2d4f6a8c0e1b2d", Key: "demo-key", MAC: "a4c138f0e2b1",
		SN: "0123456789abcdef0123456789abcd06", Fields: []explore.KV{{Key: "name", Value: "Hall"}}}
	rep := &Report{Seed: 7, A: "http://127.0.0.1:1", B: "http://127.0.0.1:2", Operations: 1, Rounds: 1,
		Differences: []*Difference{{Key: "k", Kind: "answer", Operation: "update_name", Verdict: "A", Count: 1, Ops: []explore.Op{op}}}}
	names := []string{JSONName, HTMLName, JUnitName, "diff-repro-1.sh"}
	for _, n := range names {
		if err := os.Symlink(victim, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteReports(dir, rep); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if st, err := os.Lstat(filepath.Join(dir, n)); err != nil || !st.Mode().IsRegular() {
			t.Errorf("%s: not replaced by a regular file (%v)", n, err)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the symlink's target was written: %q", b)
	}
}
