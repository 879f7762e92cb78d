package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDidYouMeanEverywhere: a mistyped command, and a mistyped flag of
// every command that takes flags, gets one line naming the closest one
// (exit 2), never Go's raw "flag provided but not defined" nor the whole
// usage. Each flag of each command is mistyped in turn (a letter
// dropped), so that a flag added later is covered too.
func TestDidYouMeanEverywhere(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"clnts", "did you mean clients?"}, {"prxy", "did you mean proxy?"}, {"serv", "did you mean serve?"},
		{"opnapi", "did you mean openapi?"}, {"fleeet", "did you mean fleet?"}, {"snd", "did you mean send?"},
		{"clients --formt text", "did you mean --format?"}, {"proxy --upstreem http://x", "did you mean --upstream?"},
		{"serve --adr 127.0.0.1:0", "did you mean --addr?"}, {"fleet --sed 3", "did you mean --seed?"},
		{"send command --typ x", "did you mean --type?"}, {"openapi --out x", "it takes none"},
	} {
		code, out, errOut := run(strings.Fields(tc.args)...)
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "flag provided but not defined") ||
			strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("gwsim %s: exit %d, want 2 and one line saying %q:\n%s%s", tc.args, code, tc.want, out, errOut)
		}
	}
	// Every flag of every command (as its -h lists them), one letter short.
	listed := regexp.MustCompile(`(?m)^  -(\S+)`)
	checked := 0
	for _, cmd := range []string{"serve", "clients", "proxy", "send", "fleet"} {
		_, out, errOut := run(cmd, "-h")
		var names []string
		for _, m := range listed.FindAllStringSubmatch(out+errOut, -1) {
			names = append(names, m[1])
		}
		if len(names) < 3 {
			t.Fatalf("gwsim %s -h lists %v", cmd, names)
		}
		for _, name := range names {
			slip := name[:len(name)-1]
			if len(name) < 5 || name == "version" || slices.Contains(names, slip) {
				continue // too short for a slip to be told from another flag
			}
			args := []string{cmd}
			if cmd == "send" {
				args = append(args, "command")
			}
			checked++
			code, _, errOut := run(append(args, "--"+slip, "x")...)
			if code != 2 || !strings.Contains(errOut, "did you mean --") {
				t.Errorf("gwsim %s --%s: exit %d: %s", cmd, slip, code, errOut)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d flags mistyped", checked)
	}
	t.Logf("%d flags mistyped, each named", checked)
}
