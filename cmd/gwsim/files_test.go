package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/safefile/safefiletest"
)

// TestInputFilesThatAreNotFiles: a fleet, scenario or cassette entry that
// is a FIFO (which would block start-up for ever, deaf to SIGTERM) or a
// symlink to /dev/zero (which would fill memory) stops gwsim serve at
// once with exit 2 and a line naming the file and what it is.
func TestInputFilesThatAreNotFiles(t *testing.T) {
	dir := t.TempDir()
	fifo, zero := safefiletest.Planted(t, dir, "fleet.yaml", "zero.yaml")
	cassettes := filepath.Join(dir, "cassettes")
	os.Mkdir(cassettes, 0o755)
	syscall.Mkfifo(filepath.Join(cassettes, "send_command-0011.json"), 0o600)
	huge := filepath.Join(dir, "huge.yaml")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 2<<20); err != nil { // sparse: 2 MiB of nothing
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--fleet", fifo}, "named pipe"},
		{[]string{"--fleet", zero}, "character device"},
		{[]string{"--scenario", fifo}, "named pipe"},
		{[]string{"--scenario", zero}, "character device"},
		{[]string{"--scenario", huge}, "more than the 1048576"},
		{[]string{"--replay", cassettes}, "named pipe"},
		{[]string{"--replay", fifo}, "not a directory"},
	} {
		var out, errb bytes.Buffer
		done := make(chan int, 1)
		go func() {
			done <- Run(context.Background(), append([]string{"serve", "--addr", "127.0.0.1:0"}, tc.args...), &out, &errb)
		}()
		select {
		case code := <-done:
			msg := errb.String()
			if code != 2 || !strings.Contains(msg, tc.want) || strings.Count(strings.TrimSpace(msg), "\n") > 0 {
				t.Errorf("%v: exit %d, %q; want exit 2 and one line saying %q", tc.args, code, msg, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: gwsim serve hung at start-up", tc.args)
		}
	}
}

// TestFleetOutReplacesAPlantedSymlink: gwsim fleet --out FILE, where FILE
// is a symlink planted to another file, writes a new FILE, mode 0600 (it
// holds secrets), and leaves the link's target as it was.
func TestFleetOutReplacesAPlantedSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "authorized_keys")
	os.WriteFile(victim, []byte("ssh-ed25519 AAAA precious"), 0o600)
	out := filepath.Join(dir, "fleet.yaml")
	os.Symlink(victim, out)
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), []string{"fleet", "--seed", "3", "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if b, _ := os.ReadFile(victim); string(b) != "ssh-ed25519 AAAA precious" {
		t.Fatalf("the symlink's target was overwritten: %q", b)
	}
	if st, err := os.Lstat(out); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("%s: %v %v", out, st, err)
	} else if st.Mode().Perm() != 0o600 {
		// It holds the fleet's secrets.
		t.Errorf("%s has mode %v, want 0600", out, st.Mode().Perm())
	}
	if b, _ := os.ReadFile(out); !bytes.Contains(b, []byte("accounts:")) {
		t.Errorf("the fleet written: %.100q", b)
	}
}

// TestSizeFlagsHaveBounds: a size flag far too large is refused with exit
// 2 and its bound, before anything is allocated (--journal-size
// 2000000000 used to crash with "out of memory").
func TestSizeFlagsHaveBounds(t *testing.T) {
	for _, tc := range []struct{ args []string }{
		{[]string{"serve", "--journal-size", "2000000000"}},
		{[]string{"serve", "--max-events-clients", "0"}},
		{[]string{"serve", "--max-events-clients", "1000000"}},
		{[]string{"serve", "--rate-limit", "2000000000"}},
		{[]string{"serve", "--gc-headroom", "-1"}},
		{[]string{"serve", "--gc-headroom", "1000000"}},
		{[]string{"serve", "--seed", "1", "--gateways", "2000000000"}},
		{[]string{"serve", "--seed", "1", "--gateways", "100000", "--devices-per-gateway", "10000"}},
		{[]string{"fleet", "--gateways", "1000000", "--devices-per-gateway", "100000"}},
	} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), tc.args, &out, &errb) // refused before it listens
		flag := tc.args[len(tc.args)-2]
		if code != 2 || !strings.Contains(errb.String(), " to ") && !strings.Contains(errb.String(), "more than") {
			t.Errorf("%v: exit %d %q, want 2 and the bound", tc.args, code, errb.String())
		}
		if !strings.Contains(errb.String(), flag) && !strings.Contains(errb.String(), "devices") {
			t.Errorf("%v: the error %q does not name %s", tc.args, errb.String(), flag)
		}
	}
}

// TestSendSecretFileThatIsNotAFile: gwsim send --secret-file naming a
// FIFO (which hung it for ever), /dev/zero (which grew it without bound)
// or a file larger than a secret is refused at once, exit 2, with a line
// naming the file and what it is.
func TestSendSecretFileThatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "secret")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	big := filepath.Join(dir, "big")
	os.WriteFile(big, nil, 0o600)
	os.Truncate(big, 1<<20)
	for _, tc := range []struct{ file, want string }{
		{fifo, "named pipe"},
		{"/dev/zero", "character device"},
		{big, "more than the 65536"},
	} {
		var out, errb bytes.Buffer
		done := make(chan int, 1)
		go func() {
			done <- Run(context.Background(), []string{"send", "command", "--target", "http://127.0.0.1:1", "--api-key", "other-key",
				"--secret-file", tc.file, "--type", "Light Dimmer", "dimming=40"}, &out, &errb)
		}()
		select {
		case code := <-done:
			if code != 2 || !strings.Contains(errb.String(), tc.want) || !strings.Contains(errb.String(), "--secret-file") {
				t.Errorf("--secret-file %s: exit %d, %q; want exit 2 and %q", tc.file, code, errb.String(), tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("--secret-file %s: gwsim send hung", tc.file)
		}
	}
}

// testToken is an admin token gwsim takes (server.CheckAdminToken).
const testToken = "3f9c2a7d1e6b4058a9c3d2e1f0b7a6c5"
