package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/deploy"
	"github.com/gwdmi/gwtools/gatewayapi/version"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestVersionEverywhere: --version works after every subcommand (the
// README lists it among serve's flags) and prints the one version line.
func TestVersionEverywhere(t *testing.T) {
	want := fmt.Sprintln("gwsim", version.Get())
	for _, args := range [][]string{{"--version"}, {"version"}, {"-version"},
		{"serve", "--version"}, {"serve", "--addr", "127.0.0.1:0", "--version"}, {"fleet", "--version"},
		{"send", "--version"}, {"send", "command", "--version"}, {"openapi", "--version"}, {"gwsim", "serve", "--version"}} {
		code, stdout, stderr := run(args...)
		if code != 0 || stdout != want || stderr != "" {
			t.Errorf("gwsim %q: exit %d, stdout %q, stderr %q; want 0 and %q", args, code, stdout, stderr, want)
		}
	}
}

// TestMistakesOneLine: a mistyped subcommand, flag or operation gets one
// line naming it, with the closest right one; no usage text follows.
func TestMistakesOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serv"}, `unknown command "serv", did you mean serve?`},
		{[]string{"sever"}, `did you mean serve?`},
		{[]string{"fleat"}, `did you mean fleet?`},
		{[]string{"frobnicate"}, `unknown command "frobnicate" (gwsim -h lists the commands)`},
		{[]string{"--addr", ":8080"}, "gwsim: --addr before a command: the command comes first, e.g. gwsim serve --addr"},
		{[]string{"serve", "--adr", ":8080"}, "unknown flag --adr, did you mean --addr?"},
		{[]string{"serve", "--fleeet", "x.yaml"}, "did you mean --fleet?"},
		{[]string{"serve", "--store-rest"}, "did you mean --store-reset?"},
		{[]string{"serve", "--bogus"}, "unknown flag --bogus (gwsim serve -h lists the flags)"},
		{[]string{"serve", "--rate-limit", "many"}, `invalid value "many" for flag --rate-limit`},
		{[]string{"serve", "--addr"}, "flag needs an argument: --addr"},
		{[]string{"fleet", "--seeed", "3"}, "gwsim fleet: unknown flag --seeed, did you mean --seed?"},
		{[]string{"send", "comand", "a=1"}, `unknown operation "comand", did you mean command?`},
		{[]string{"send", "message", "--taget", "http://127.0.0.1:1", "a=1"}, "unknown flag --taget, did you mean --target?"},
	} {
		code, stdout, stderr := run(tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("gwsim %q: exit %d, stdout %q, stderr %q; want 2 and one line with %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"addr", "fleet", "seed", "store", "store-reset", "log-level", "log-format"}
	for word, want := range map[string]string{"adr": "addr", "addrr": "addr", "flete": "fleet", "sotre": "store",
		"log-levle": "log-level", "stor": "store", "x": "", "zzzzzz": "", "format": "", "fleets": "fleet"} {
		if got := suggest(word, names); got != want {
			t.Errorf("suggest(%q) = %q, want %q", word, got, want)
		}
	}
}

// TestStoreValue: a --store value that is not a Redis URL is refused
// before anything dials, in one sentence naming the flag with an example
// built from the value; a password in it is never repeated.
func TestStoreValue(t *testing.T) {
	code, stdout, stderr := run("serve", "--addr", "127.0.0.1:0", "--store", "127.0.0.1:6379")
	want := `gwsim: --store "127.0.0.1:6379" is not a store URL; give ` + simulator.StoreForms + `, e.g. --store redis://127.0.0.1:6379/0` + "\n"
	if code != 2 || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout, stderr, want)
	}
	code, _, stderr = run("serve", "--addr", "127.0.0.1:0", "--store", "admin:hunter2secret@redis.internal:6379")
	if code != 2 || strings.Contains(stderr, "hunter2secret") || !strings.Contains(stderr, "--store") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("a value with a password: exit %d, stderr %q", code, stderr)
	}
	t.Setenv("GWSIM_STORE", "localhost:6380")
	code, _, stderr = run("serve", "--addr", "127.0.0.1:0")
	if code != 2 || !strings.Contains(stderr, `GWSIM_STORE "localhost:6380" is not a store URL`) || !strings.Contains(stderr, "redis://localhost:6380/0") {
		t.Errorf("GWSIM_STORE: exit %d, stderr %q", code, stderr)
	}
	for _, ok := range []string{"redis://127.0.0.1:6379/0", "rediss://u:p@h:6380/1", "redis://h1:1?addr=h2:2"} {
		if err := checkStore(ok, "--store"); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestSentinelPasswordNeedsSentinel: $GWSIM_SENTINEL_PASSWORD with a
// store that is not redis+sentinel:// (from --store, from GWSIM_STORE, or
// none) is refused before anything dials, exit 2, in one line naming the
// variable and never its value; with a redis+sentinel:// store it is
// taken. No flag takes it.
func TestSentinelPasswordNeedsSentinel(t *testing.T) {
	const secret = "hunter2-sentinel-0123456789"
	t.Setenv(sentinelPasswordEnv, secret)
	for what, args := range map[string][]string{
		"--store redis://":  {"serve", "--addr", "127.0.0.1:0", "--store", "redis://:data-pw@127.0.0.1:6379/0"},
		"--store rediss://": {"serve", "--addr", "127.0.0.1:0", "--store", "rediss://127.0.0.1:6380/0"},
		"--store file:":     {"serve", "--addr", "127.0.0.1:0", "--store", "file:" + filepath.Join(t.TempDir(), "state.db")},
		"no store":          {"serve", "--addr", "127.0.0.1:0"},
		"--log-format json": {"serve", "--addr", "127.0.0.1:0", "--store", "redis://127.0.0.1:6379/0", "--log-format", "json"},
	} {
		code, stdout, stderr := run(args...)
		if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, sentinelPasswordEnv) ||
			!strings.Contains(stderr, "redis+sentinel://") || strings.Contains(stderr, secret) || strings.Contains(stderr, "data-pw") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and one line naming %s without its value", what, code, stdout, stderr, sentinelPasswordEnv)
		}
	}
	t.Setenv("GWSIM_STORE", "redis://127.0.0.1:6379/0")
	code, _, stderr := run("serve", "--addr", "127.0.0.1:0")
	if code != 2 || !strings.Contains(stderr, "GWSIM_STORE is not a redis+sentinel:// URL") || strings.Contains(stderr, secret) {
		t.Errorf("GWSIM_STORE redis://: exit %d, stderr %q", code, stderr)
	}
	if pw, err := sentinelPassword("redis+sentinel://h:26379/gwsim/0", "GWSIM_STORE", os.Getenv); err != nil || pw != secret {
		t.Errorf("with redis+sentinel://: %v (want the password taken)", err)
	}
	if pw, err := sentinelPassword("redis://h:6379/0", "--store", func(string) string { return "" }); err != nil || pw != "" {
		t.Errorf("unset: %q %v (want nothing, no error)", pw, err)
	}
	if code, _, stderr := run("serve", "--sentinel-password", "x"); code != 2 || !strings.Contains(stderr, "unknown flag") {
		t.Errorf("a --sentinel-password flag: exit %d, stderr %q (want none: environment only)", code, stderr)
	}
}

// TestEntrypointRule: the image runs gwsim as its entrypoint; a first
// argument gwsim is dropped and gwconform hands over to gwconform, and
// deploy.Entrypoint, which the recipe tests apply to every documented
// docker run and manifest, follows the same rule.
func TestEntrypointRule(t *testing.T) {
	for _, args := range [][]string{nil, {"serve"}, {"gwsim", "serve", "--fleet", "f"}, {"gwconform", "run", "--target", "http://x"},
		{"--version"}, {"gwconform"}, {"fleet", "gwconform"}} {
		p, rest := Entry(args)
		dp, drest := deploy.Entrypoint(args)
		if p != dp || strings.Join(rest, "\x00") != strings.Join(drest, "\x00") {
			t.Errorf("%q: gwsim runs %s %q, deploy models %s %q", args, p, rest, dp, drest)
		}
	}
	if code, stdout, stderr := run("gwsim", "fleet", "--seed", "1", "--gateways", "1", "--devices-per-gateway", "1"); code != 0 || !strings.Contains(stdout, "accounts:") {
		t.Errorf("gwsim gwsim fleet: exit %d %q", code, stderr)
	}
	// Neither beside the test binary nor on an empty PATH: one line, exit 2.
	t.Setenv("PATH", t.TempDir())
	code, _, stderr := run("gwconform", "run")
	if code != 2 || !strings.Contains(stderr, "go install github.com/gwdmi/gwtools/cmd/gwconform@latest") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("gwsim gwconform without gwconform: exit %d %q", code, stderr)
	}
}

// TestEntrypointHandsOverToGwconform: the built gwsim, as the image runs
// it, hands `gwsim gwconform ARGS` over to the gwconform beside it, with
// the arguments, standard output and exit code unchanged.
func TestEntrypointHandsOverToGwconform(t *testing.T) {
	bin := simtest.PrivateBinary(t, "gwsim")
	fake := filepath.Join(filepath.Dir(bin), "gwconform")
	script := "#!/bin/sh\necho \"gwconform got: $*\"\nexit 3\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir()) // beside gwsim, not from the PATH
	out, err := exec.Command(bin, "gwconform", "run", "--target", "http://127.0.0.1:1", "--report-dir", "/reports").Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || string(out) != "gwconform got: run --target http://127.0.0.1:1 --report-dir /reports\n" {
		t.Errorf("gwsim gwconform run ...: %v, output %q; want gwconform's exit 3 and its output", err, out)
	}
	out, err = exec.Command(bin, "gwsim", "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "gwsim ") {
		t.Errorf("gwsim gwsim --version: %v %q", err, out)
	}
}
