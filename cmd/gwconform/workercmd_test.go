package main

import (
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/engine"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// TestWorkerCommandLineHoldsNoSecret: a --parallel worker's command line,
// which any user of the machine can read (ps, /proc), names the target
// without its user information and carries no admin token; both come by
// the environment, and the worker reads the target whole from it, only as
// a worker.
func TestWorkerCommandLineHoldsNoSecret(t *testing.T) {
	const password, token = "pw-Zq81x", "tok-77aa"
	full := "http://vendor:" + password + "@127.0.0.1:8443/api"
	base, err := client.ParseBaseURL(full)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.NewAt(base, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m := &runMain{env: &engine.Env{AdminToken: token, Bench: catalog.Bench{Fleet: fleet.Demo(), Seed: 7, Client: cl}}}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	m.opts.define(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	args, env := m.workerCommand(1, 2, t.TempDir(), &engine.Worker{N: 1, Report: "r.json"})
	for _, a := range args {
		if strings.Contains(a, password) || strings.Contains(a, token) || strings.Contains(a, "vendor") {
			t.Errorf("a worker's argument %q holds a secret", a)
		}
	}
	if i := slices.Index(args, "--target"); i < 0 || args[i+1] != "http://127.0.0.1:8443/api" {
		t.Errorf("the worker's --target: %v", args)
	}
	if !slices.Contains(env, workerTargetEnv+"="+full) || !slices.Contains(env, "GWSIM_ADMIN_TOKEN="+token) {
		t.Errorf("the worker's environment lacks the target or the token")
	}

	// The worker reads the target whole from its environment; a run that
	// is no worker ignores the variable.
	t.Setenv(workerTargetEnv, full)
	for _, worker := range []int{1, 0} {
		var w runMain
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		w.opts.define(fs)
		if err := fs.Parse(args[1:]); err != nil {
			t.Fatal(err)
		}
		w.opts.Worker = worker
		if err := w.opts.check(); err != nil {
			t.Fatal(err)
		}
		want := full
		if worker == 0 {
			want = "http://127.0.0.1:8443/api"
		}
		if got := w.opts.base.String(); got != want {
			t.Errorf("worker %d reads the target %q, want %q", worker, got, want)
		}
	}
}
