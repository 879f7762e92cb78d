package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance/explore"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// TestReplayNeverSendsTheTokenToAFilesObserver: gwconform replay of an
// explore.json whose observer (written in the file) is not on loopback
// sends $GWSIM_ADMIN_TOKEN nowhere there, and says so once; the same
// observer named with --observer on the command line gets it. Real
// process, real file, a real listener on a non-loopback address.
func TestReplayNeverSendsTheTokenToAFilesObserver(t *testing.T) {
	const token = "env-admin-token-0123456789abcdef0123456789"
	sim := startSim(t, fleet.Demo())
	observer, got := vendor(t, sim.URL(), token)
	d := fleet.Demo()
	tg, _ := d.Target()
	ef := explore.File{Kind: explore.FileKind, Reset: true, Report: explore.Report{
		Seed: 1, Target: sim.URL(), Observer: observer, FailOn: "MUST",
		Found: &explore.Finding{Kind: "disagreement", Ops: []explore.Op{{Kind: explore.ReadDevice, MAC: tg.MAC, SN: tg.Devices["Light Dimmer"].SN}}},
	}}
	b, _ := json.Marshal(ef)
	file := filepath.Join(t.TempDir(), "explore.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"GWSIM_ADMIN_TOKEN=" + token}
	r := runCommand(t, env, "replay", file)
	if n := got.Load(); n != 0 {
		t.Errorf("replay sent the environment's token to the observer read from the file %d times\n%s%s", n, r.stdout, r.stderr)
	}
	if strings.Count(r.stderr, "$GWSIM_ADMIN_TOKEN is not sent to "+observer) != 1 {
		t.Errorf("replay does not say once that the token is not sent to %s:\n%s", observer, r.stderr)
	}
	r = runCommand(t, env, "replay", file, "--observer", observer)
	if got.Load() == 0 || strings.Count(r.stderr, "the admin token ($GWSIM_ADMIN_TOKEN) is sent to "+observer) != 1 {
		t.Errorf("replay --observer %s: token sent %d times\n%s%s", observer, got.Load(), r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, token) {
		t.Error("the token was printed")
	}
}
