package main

import (
	"testing"

	"github.com/gwdmi/gwtools/deploy"
)

// TestRecipeCommandLines: every gwsim command line in the recipes (deploy/,
// the Dockerfile, docs/ci.md, docs/deploy.md) is accepted by gwsim's own
// flag parsing.
func TestRecipeCommandLines(t *testing.T) {
	deploy.CheckPrograms(t, "../..", "gwsim", checkArgs)
}
