package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance/bundle"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// forgedText is what a forged bundle puts in a member's name, a key ID
// or a manifest field to draw a line of its own on the terminal: clear
// the line, return to its start, write a verdict.
const forgedText = "\x1b[2K\r\x1b[32mverified: certified run\x1b[0m\x07\u009b"

func noControlBytes(t *testing.T, what, out string) {
	t.Helper()
	for _, c := range []string{"\x1b", "\x07", "\r", "\u009b"} {
		if strings.Contains(out, c) {
			t.Errorf("%s passes %q to the terminal:\n%q", what, c, out)
		}
	}
}

// writeTarGz writes files as a gzipped tar at path.
func writeTarGz(t *testing.T, path string, files map[string][]byte) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, b := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
		tw.Write(b)
	}
	tw.Close()
	gz.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyEscapesAHostileBundle: gwconform verify of a bundle whose
// member names, key ID, manifest and path carry ESC, CR, BEL and C1
// sequences prints them escaped, with and without --key, and exits 1:
// no line it prints can be redrawn into "verified: certified".
func TestVerifyEscapesAHostileBundle(t *testing.T) {
	dir := t.TempDir()
	pub := keygen(t, dir, "lab") + ".pub"
	manifest, _ := json.Marshal(map[string]any{"mode": "certified" + forgedText, "verdict": "PASS" + forgedText,
		"target": "http://x" + forgedText, "product": map[string]string{"name": forgedText}})
	env, _ := json.Marshal(bundle.Envelope{PayloadType: "application/vnd.in-toto+json", Payload: "e30=",
		Signatures: []bundle.Signature{{KeyID: "SHA256:" + forgedText, Sig: "AAAA"}}})
	path := filepath.Join(dir, "b"+strings.ReplaceAll(forgedText, "/", "")+".tar.gz")
	writeTarGz(t, path, map[string][]byte{
		bundle.ManifestFile:    manifest,
		bundle.AttestationFile: env,
		"notes" + forgedText:   []byte("x"),
		forgedText + "/../x":   []byte("x"),
		"report.json":          []byte(`{"title":"` + strings.ReplaceAll(forgedText, "\x1b", `\u001b`) + `"}`),
	})
	for _, flags := range [][]string{nil, {"--key", pub}, {"--integrity-only"}} {
		code, out := verify(t, path, flags...)
		if code != 1 || !strings.Contains(out, "NOT VERIFIED") {
			t.Errorf("verify %v of a hostile bundle: exit %d, want 1 and NOT VERIFIED:\n%q", flags, code, out)
		}
		noControlBytes(t, "verify", out)
	}
}

// TestVerifyGateRequirements: a gate states what it accepts; verify exits
// 0 only when the signed bundle is of the mode, product, version and
// signer required, and names each that does not hold otherwise (exit 1).
// --require-key-id without --key is a usage error (exit 2).
func TestVerifyGateRequirements(t *testing.T) {
	simtest.Heavy(t)
	keys := t.TempDir()
	lab := keygen(t, keys, "lab")
	other := keygen(t, keys, "other")
	path := filepath.Join(t.TempDir(), "cert.tar.gz")
	r := gwconform(t, "--bundle", path, "--mode", "certified", "--product", "Acme Hub", "--product-version", "2.1.0", "--sign-key", lab)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	code, out := verify(t, path, "--key", lab+".pub")
	id := regexp.MustCompile(`signed by key (SHA256:\S+)`).FindStringSubmatch(out)
	if code != 0 || id == nil {
		t.Fatalf("verify --key: exit %d\n%s", code, out)
	}
	all := []string{"--key", lab + ".pub", "--require-mode", "certified", "--require-product", "Acme Hub", "--require-version", "2.1.0", "--require-key-id", id[1]}
	if code, out := verify(t, path, all...); code != 0 {
		t.Errorf("every requirement met: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--key", lab + ".pub", "--require-mode", "ordinary"}, "--require-mode ordinary: the bundle's mode is certified"},
		{[]string{"--key", lab + ".pub", "--require-product", "Other Hub"}, "--require-product Other Hub: the bundle's product is Acme Hub"},
		{[]string{"--key", lab + ".pub", "--require-version", "3.0"}, "--require-version 3.0: the bundle's product version is 2.1.0"},
		{[]string{"--key", lab + ".pub", "--key", other + ".pub", "--require-key-id", "SHA256:not-the-lab"}, "--require-key-id SHA256:not-the-lab: the bundle is signed by " + id[1]},
	} {
		if code, out := verify(t, path, tc.flags...); code != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("verify %v: exit %d, want 1 and %q:\n%s", tc.flags, code, tc.want, out)
		}
	}
	if code, out := verify(t, path, "--integrity-only", "--require-key-id", id[1]); code != 2 || !strings.Contains(out, "--require-key-id needs --key") {
		t.Errorf("--require-key-id without --key: exit %d\n%s", code, out)
	}
	if code, out := verify(t, path, "--key", lab+".pub", "--require-mode", "certfied"); code != 2 || !strings.Contains(out, "--require-mode certfied") {
		t.Errorf("--require-mode certfied: exit %d\n%s", code, out)
	}
}
