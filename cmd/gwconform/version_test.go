package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance"
)

// TestVersionAfterEverySubcommand: gwconform COMMAND --version prints the
// one version line and exits 0 for every subcommand (the gwconform that
// TestMain built).
func TestVersionAfterEverySubcommand(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}, {"run", "--version"}, {"run", "--target", "http://127.0.0.1:1", "--version"},
		{"load", "--version"}, {"replay", "--version"}, {"baseline", "--version"}, {"verify", "--version"},
		{"sign", "--version"}, {"checks", "-version"}} {
		cmd := exec.Command(bins.gwconform, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err != nil || !strings.HasPrefix(stdout.String(), "gwconform ") || !strings.Contains(stdout.String(), "catalog "+conformance.CatalogVersion) ||
			strings.Count(stdout.String(), "\n") != 1 || stderr.Len() > 0 {
			t.Errorf("gwconform %q: %v, stdout %q, stderr %q", args, err, stdout.String(), stderr.String())
		}
	}
	if versionAsked([]string{"run", "--", "--version"}) || versionAsked([]string{"bogus", "--version"}) {
		t.Error("--version after -- or after an unknown command taken as asking for the version")
	}
}
