package checksdoc

import (
	"os"
	"testing"
)

// TestChecksDocIsCurrent fails when docs/checks.md no longer says what the
// suite declares; `make checks-doc` rewrites it.
func TestChecksDocIsCurrent(t *testing.T) {
	want := Markdown()
	got, err := os.ReadFile("../../docs/checks.md")
	if err != nil {
		t.Fatalf("reading docs/checks.md: %v (run make checks-doc)", err)
	}
	if string(got) != want {
		t.Fatalf("docs/checks.md is stale: run `make checks-doc` and commit it")
	}
}
