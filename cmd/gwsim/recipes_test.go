package main

import (
	"testing"

	"github.com/gwdmi/gwtools/deploy"
)

// TestRecipeCommandLines: every gwsim command line in the recipes (deploy/,
// the Dockerfile, docs/ci.md, docs/deploy.md) is accepted by gwsim's own
// flag parsing.
func TestRecipeCommandLines(t *testing.T) {
	lines, err := deploy.All("../..")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range lines {
		if l.Program != "gwsim" {
			continue
		}
		n++
		if err := checkArgs(l.Args); err != nil {
			t.Errorf("%s\n    refused: %v", l, err)
		}
	}
	if n == 0 {
		t.Fatal("no gwsim command line found in the recipes")
	}
	t.Logf("%d gwsim command lines checked", n)
}
