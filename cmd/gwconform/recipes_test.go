package main

import (
	"testing"

	"github.com/gwdmi/gwtools/deploy"
)

// TestRecipeCommandLines: every gwconform command line in the recipes (deploy/,
// the Dockerfile, docs/ci.md, docs/deploy.md) is accepted by gwconform's own
// flag parsing.
func TestRecipeCommandLines(t *testing.T) {
	deploy.CheckPrograms(t, "../..", "gwconform", checkArgs)
}
