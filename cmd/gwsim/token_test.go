package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestWeakAdminTokensRefused: gwsim serve and gwsim proxy refuse to start
// (exit 2, one line that does not repeat the token) with the placeholder
// token of our Kubernetes manifest, or any token shorter than 32
// characters, from the environment, the command line or a file.
func TestWeakAdminTokensRefused(t *testing.T) {
	bin := simtest.Binary(t, "gwsim")
	dir := t.TempDir()
	placeholder := "change-me-to-a-long-random-token"
	file := filepath.Join(dir, "token")
	os.WriteFile(file, []byte(placeholder+"\n"), 0o600)
	for _, tc := range []struct {
		name, env string
		args      []string
		want      string
	}{
		{"serve, the manifest's placeholder in the environment", placeholder, []string{"serve", "--addr", "127.0.0.1:0"}, "placeholder"},
		{"serve, a short token in the environment", "short-token-9f3a", []string{"serve", "--addr", "0.0.0.0:0"}, "at least 32"},
		{"serve, the placeholder in --admin-token-file", "", []string{"serve", "--addr", "127.0.0.1:0", "--admin-token-file", file}, "placeholder"},
		{"serve, a short --admin-token", "", []string{"serve", "--addr", "127.0.0.1:0", "--admin-token", "abc123"}, "at least 32"},
		{"proxy, the placeholder in the environment", placeholder, []string{"proxy", "--addr", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1"}, "placeholder"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, bin, tc.args...)
		cmd.Env = append(os.Environ(), "GWSIM_ADMIN_TOKEN="+tc.env)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		cancel()
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != 2 || !strings.Contains(out.String(), tc.want) || strings.Contains(out.String(), "listening") {
			t.Errorf("%s: exit %d, want 2 and %q:\n%s", tc.name, code, tc.want, out.String())
		}
		if tc.env != "" && strings.Contains(out.String(), tc.env) {
			t.Errorf("%s: the error repeats the token", tc.name)
		}
	}
}

// startGwsim runs the gwsim binary with args until its banner is out,
// and returns all it wrote on stdout and stderr.
func startGwsim(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(simtest.Binary(t, "gwsim"), args...)
	cmd.Env = append(os.Environ(), env...)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(out.String(), "credentials (from") {
			return out.String()
		}
	}
	t.Fatalf("gwsim %v printed no banner:\n%s", args, out.String())
	return ""
}

// TestTokenOnTheCommandLineIsWarned: a good --admin-token is taken, with a
// warning that points to the environment or a file; the banner says who
// may use the admin API, and without a token beyond loopback says exactly
// what is open to the network.
func TestTokenOnTheCommandLineIsWarned(t *testing.T) {
	out := startGwsim(t, []string{"GWSIM_ADMIN_TOKEN="}, "serve", "--addr", "127.0.0.1:0", "--admin-token", testToken)
	if !strings.Contains(out, "visible to every user") || !strings.Contains(out, "--admin-token-file") || strings.Contains(out, testToken) {
		t.Errorf("--admin-token on the command line:\n%s", out)
	}
	if !strings.Contains(out, "admin: needs the admin token") {
		t.Errorf("banner with a token:\n%s", out)
	}
	out = startGwsim(t, []string{"GWSIM_ADMIN_TOKEN="}, "serve", "--addr", "0.0.0.0:0", "--admin", "open")
	if !strings.Contains(out, "admin: OPEN TO THE NETWORK without a token") || !strings.Contains(out, "reset the state") {
		t.Errorf("banner on 0.0.0.0 without a token:\n%s", out)
	}
	out = startGwsim(t, []string{"GWSIM_ADMIN_TOKEN=" + testToken}, "serve", "--addr", "0.0.0.0:0")
	if strings.Contains(out, "visible to every user") || !strings.Contains(out, "admin: needs the admin token") {
		t.Errorf("a token from the environment:\n%s", out)
	}
}
