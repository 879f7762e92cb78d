package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance/bundle"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// keygen writes a key pair named name in dir with gwconform keygen.
func keygen(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if code, out := command(t, "keygen", "--out", p); code != 0 {
		t.Fatalf("keygen: exit %d\n%s", code, out)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the private key %s: %v, mode %v; want 0600", p, err, st.Mode())
	}
	return p
}

// TestSignedBundleForgeriesFail: a certified run signed with a lab's key
// verifies with only its public key, in another folder; a careful forgery
// (mode, product and target changed in the manifest and report.json,
// every hash recomputed), the same forgery signed again with
// the forger's key, and another bundle given the genuine signature each
// fail verify --key, naming what does not match. Without --key, verify
// says "unsigned: integrity only", never "verified: certified", and exits 1.
func TestSignedBundleForgeriesFail(t *testing.T) {
	simtest.Heavy(t)
	keys := t.TempDir()
	lab := keygen(t, keys, "lab")
	forger := keygen(t, keys, "forger")
	if out, _ := os.ReadFile(lab); len(out) == 0 {
		t.Fatal("no private key written")
	}
	if code, out := command(t, "keygen", "--out", lab); code != 2 || !strings.Contains(out, "never overwritten") {
		t.Errorf("keygen over an existing key: exit %d\n%s", code, out)
	}
	path := filepath.Join(t.TempDir(), "cert.tar.gz")
	r := gwconform(t, "--bundle", path, "--mode", "certified", "--product", "Acme Hub", "--product-version", "2.1.0", "--sign-key", lab)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	privateKey, _ := os.ReadFile(lab)
	if strings.Contains(r.stdout+r.stderr, strings.TrimSpace(string(privateKey))[30:60]) {
		t.Error("the run printed the private key")
	}
	// Another machine: only the bundle and the public key.
	elsewhere := t.TempDir()
	copyFile(t, path, filepath.Join(elsewhere, "cert.tar.gz"))
	copyFile(t, lab+".pub", filepath.Join(elsewhere, "lab.pub"))
	code, out := verify(t, filepath.Join(elsewhere, "cert.tar.gz"), "--key", filepath.Join(elsewhere, "lab.pub"))
	if code != 0 || !strings.Contains(out, "verified: certified run of Acme Hub 2.1.0") || !strings.Contains(out, "signed by key SHA256:") {
		t.Fatalf("the genuine bundle with the lab's key: exit %d\n%s", code, out)
	}
	// Several keys, the right one among them.
	if code, out := verify(t, path, "--key", forger+".pub", "--key", lab+".pub"); code != 0 {
		t.Errorf("with the forger's and the lab's keys: exit %d\n%s", code, out)
	}
	// Without a key: integrity only, never "verified: certified".
	code, out = verify(t, path)
	if code != 1 || !strings.Contains(out, "unsigned: integrity only") || strings.Contains(out, "verified: certified") {
		t.Errorf("without --key: exit %d, want 1 and \"unsigned: integrity only\"\n%s", code, out)
	}

	// The forgery: mode, product and target changed everywhere, every
	// hash recomputed, the genuine signature kept.
	forge := func() map[string][]byte {
		files := bundleFiles(t, path)
		files[bundle.ManifestFile] = editJSON(t, files[bundle.ManifestFile], func(v map[string]any) {
			v["mode"] = "certified"
			v["product"] = map[string]any{"name": "Other Hub", "version": "9.9"}
			v["target"] = "https://staging.other.example"
		})
		files[report.JSONFile] = editJSON(t, files[report.JSONFile], func(v map[string]any) { v["target"] = "https://staging.other.example" })
		return files
	}
	files := forge()
	forged := rewrite(t, files, true)
	code, out = verify(t, forged, "--key", lab+".pub")
	if code != 1 || !strings.Contains(out, "NOT VERIFIED") || !strings.Contains(out, "manifest.json has SHA-256") ||
		!strings.Contains(out, "report.json has SHA-256") || !strings.Contains(out, "the signed target is") {
		t.Errorf("the forgery with the genuine signature: exit %d\n%s", code, out)
	}
	if code, out := verify(t, forged); code != 1 || strings.Contains(out, "verified: certified") {
		t.Errorf("the forgery without --key: exit %d\n%s", code, out)
	}
	// The same forgery signed again with the forger's key.
	files = forge()
	rewrite(t, files, true) // fixes the manifest's hashes in files
	fk, err := readSignKey(forger)
	if err != nil {
		t.Fatal(err)
	}
	if files[bundle.AttestationFile], err = bundle.Attest(files, fk); err != nil {
		t.Fatal(err)
	}
	code, out = verify(t, rewrite(t, files, false), "--key", lab+".pub")
	if code != 1 || !strings.Contains(out, "which is not a key given with --key") {
		t.Errorf("the forgery signed with the forger's key: exit %d\n%s", code, out)
	}
	// One edited byte of one file, nothing else changed.
	files = bundleFiles(t, path)
	files[report.HTMLFile][len(files[report.HTMLFile])/2] ^= 1
	if code, out := verify(t, rewrite(t, files, true), "--key", lab+".pub"); code != 1 || !strings.Contains(out, "report.html has SHA-256") {
		t.Errorf("one byte of report.html: exit %d\n%s", code, out)
	}
	// Another bundle (another run, same key) given this one's signature.
	other := filepath.Join(t.TempDir(), "other.tar.gz")
	if r := gwconform(t, "--bundle", other, "--seed", "7", "--sign-key", lab); r.code != 0 {
		t.Fatalf("second run: exit %d\n%s", r.code, r.stderr)
	}
	files = bundleFiles(t, other)
	files[bundle.AttestationFile] = bundleFiles(t, path)[bundle.AttestationFile]
	code, out = verify(t, rewrite(t, files, false), "--key", lab+".pub")
	if code != 1 || !strings.Contains(out, "the signature is another bundle's") {
		t.Errorf("a signature moved to another bundle: exit %d\n%s", code, out)
	}
	// A key file others may read is refused, without printing it.
	loose := filepath.Join(keys, "loose")
	copyFile(t, lab, loose)
	os.Chmod(loose, 0o644)
	r = gwconform(t, "--bundle", filepath.Join(t.TempDir(), "x.tar.gz"), "--sign-key", loose)
	if r.code != 2 || !strings.Contains(r.stderr, "readable by others") || strings.Contains(r.stderr, "PRIVATE") {
		t.Errorf("a key readable by others: exit %d\n%s", r.code, r.stderr)
	}
}

// TestVerifyExitsZeroOnlyOnAPass: a signed bundle whose verdict is FAIL
// exits 1, lists its MUST failures first and says truly what its SHOULD
// failures did; --accept-verdict FAIL accepts it explicitly.
func TestVerifyExitsZeroOnlyOnAPass(t *testing.T) {
	simtest.Heavy(t)
	key := keygen(t, t.TempDir(), "ci")
	path := filepath.Join(t.TempDir(), "fail.tar.gz")
	r := gwconform(t, "--target", acceptsDimming101(t), "--bundle", path, "--sign-key", key)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	var m bundle.Manifest
	json.Unmarshal(bundleFiles(t, path)[bundle.ManifestFile], &m)
	if m.Verdict != report.VerdictFail {
		t.Fatalf("the run's verdict is %s", m.Verdict)
	}
	code, out := verify(t, path, "--key", key+".pub")
	must, should := strings.Index(out, "MUST failure(s)"), strings.Index(out, "SHOULD failure(s)")
	if code != 1 || must < 0 || should < 0 || must > should || !strings.Contains(out, "command.light-dimmer.dimming.101.json: ") ||
		!strings.Contains(out, "the verdict is FAIL, not PASS: exit 1") || strings.Contains(out, "failed on them only with") ||
		!strings.Contains(out, "they do not change its verdict") {
		t.Errorf("verify of a FAIL: exit %d, want 1, MUST failures first\n%s", code, out)
	}
	// A FAIL bundle is genuine, but its first line never says "verified".
	if first, _, _ := strings.Cut(out, "\n"); strings.Contains(first, "verified:") || !strings.Contains(first, "genuine record of a run that did not pass (verdict FAIL)") {
		t.Errorf("verify of a FAIL opens %q", first)
	}
	if code, out := verify(t, path, "--key", key+".pub", "--accept-verdict", "FAIL"); code != 0 {
		t.Errorf("--accept-verdict FAIL: exit %d\n%s", code, out)
	}
	if code, out := verify(t, path, "--key", key+".pub", "--accept-verdict", "fail!"); code != 2 {
		t.Errorf("--accept-verdict fail!: exit %d\n%s", code, out)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
