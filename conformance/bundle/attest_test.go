package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// TestPAE is the DSSE specification's own example.
func TestPAE(t *testing.T) {
	got := string(PAE("http://example.com/HelloWorld", []byte("hello world")))
	if want := "DSSEv1 29 http://example.com/HelloWorld 11 hello world"; got != want {
		t.Errorf("PAE = %q, want %q", got, want)
	}
}

func testKey(t *testing.T) (ed25519.PrivateKey, ed25519.PublicKey) {
	t.Helper()
	priv, pub, _, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParsePrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k, p
}

// writeTestBundle writes a bundle of a run against target, with reports
// whose content is what it says, signed with key.
func writeTestBundle(t *testing.T, target, verdict string, key ed25519.PrivateKey) string {
	t.Helper()
	dir := t.TempDir()
	for _, w := range report.Writers {
		b := []byte("a report of " + target)
		if w.File == report.JSONFile {
			b, _ = json.Marshal(map[string]any{"target": target, "verdict": verdict})
		}
		if err := os.WriteFile(filepath.Join(dir, w.File), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "b.tar.gz")
	now := time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)
	m := Manifest{Mode: ModeCertified, Product: Product{Name: "Acme Hub", Version: "2.1.0"}, Harness: Harness{Version: "v1.4.0"},
		Catalog: Catalog{Version: "2026.11.3", Hash: "abc"}, Target: target, Verdict: verdict, StartedAt: now, EndedAt: now.Add(time.Second),
		Observer: target + "/observer"}
	if err := Write(path, Input{Manifest: m, ReportDir: dir, Console: []byte("console of " + target + "\n"), Fleet: fleet.Demo(), SignKey: key}); err != nil {
		t.Fatal(err)
	}
	return path
}

func repack(t *testing.T, files map[string][]byte) map[string][]byte {
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
	path := filepath.Join(t.TempDir(), "forged.tar.gz")
	os.WriteFile(path, buf.Bytes(), 0o644)
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func clone(files map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range files {
		out[k] = append([]byte(nil), v...)
	}
	return out
}

// TestSignatureBindsEveryByte: a signed bundle verifies with its public
// key only; every byte of every file edited, a file added or removed, the
// bundle signed again with another key (its claims edited), a signature
// moved from another bundle and an edited envelope each fail, with a
// message naming what does not match.
func TestSignatureBindsEveryByte(t *testing.T) {
	key, pub := testKey(t)
	otherKey, otherPub := testKey(t)
	genuine, err := Read(writeTestBundle(t, "https://staging.acme.example", report.VerdictPass, key))
	if err != nil {
		t.Fatal(err)
	}
	id, problems := VerifySignature(genuine, []ed25519.PublicKey{otherPub, pub})
	if len(problems) > 0 || id != KeyID(pub) {
		t.Fatalf("the genuine bundle: key %s, problems %q", id, problems)
	}
	if _, problems := VerifySignature(genuine, []ed25519.PublicKey{otherPub}); len(problems) != 1 || !strings.Contains(problems[0], "not a key given with --key") {
		t.Errorf("with another key only: %q", problems)
	}

	expect := func(name string, files map[string][]byte, keys []ed25519.PublicKey, want string) {
		t.Helper()
		_, problems := VerifySignature(repack(t, files), keys)
		if !strings.Contains(strings.Join(problems, "\n"), want) {
			t.Errorf("%s: problems %q, want one saying %q", name, problems, want)
		}
	}
	// Every byte of every signed file, flipped one at a time (the
	// manifest's and report.json's every byte; a sample of the larger).
	for name, b := range genuine {
		if name == AttestationFile {
			continue
		}
		step := 1
		if len(b) > 4000 {
			step = len(b)/4000 + 1
		}
		for i := 0; i < len(b); i += step {
			f := clone(genuine)
			f[name][i] ^= 0x20
			_, problems := VerifySignature(f, []ed25519.PublicKey{pub})
			if !strings.Contains(strings.Join(problems, "\n"), name+" has SHA-256") {
				t.Fatalf("%s byte %d edited: %q", name, i, problems)
			}
		}
	}
	f := clone(genuine)
	f["extra.txt"] = []byte("x")
	expect("a file added", f, []ed25519.PublicKey{pub}, "extra.txt is in the bundle but not in the signed statement")
	f = clone(genuine)
	delete(f, report.JUnitFile)
	expect("a file removed", f, []ed25519.PublicKey{pub}, report.JUnitFile+" is in the signed statement but not in the bundle")
	f = clone(genuine)
	delete(f, AttestationFile)
	expect("the signature removed", f, []ed25519.PublicKey{pub}, "the bundle is not signed")

	// A forger edits the claims (mode, product, target, verdict) in the
	// manifest and report.json and signs again with a key of their own.
	forged := clone(genuine)
	var m Manifest
	json.Unmarshal(forged[ManifestFile], &m)
	m.Product, m.Target, m.Verdict = Product{Name: "Other Hub", Version: "9"}, "https://evil.example", report.VerdictPass
	forged[ManifestFile], _ = json.MarshalIndent(m, "", "  ")
	forged[report.JSONFile], _ = json.Marshal(map[string]any{"target": m.Target, "verdict": m.Verdict})
	forged[AttestationFile], _ = attest(forged, m, otherKey)
	expect("signed again with another key", forged, []ed25519.PublicKey{pub}, "which is not a key given with --key")

	// The forger keeps the genuine envelope and edits its statement.
	var e Envelope
	json.Unmarshal(genuine[AttestationFile], &e)
	body, _ := base64.StdEncoding.DecodeString(e.Payload)
	e.Payload = base64.StdEncoding.EncodeToString(bytes.Replace(body, []byte("staging.acme.example"), []byte("evil.example........"), 1))
	f = clone(genuine)
	f[AttestationFile] = marshalEnvelope(e)
	expect("the statement edited", f, []ed25519.PublicKey{pub}, "does not match what it signs")

	// The signature of one bundle moved to another, same key, same claims
	// but another run.
	other, _ := Read(writeTestBundle(t, "https://staging.acme.example/b", report.VerdictFail, key))
	f = clone(other)
	f[AttestationFile] = genuine[AttestationFile]
	expect("a signature moved to another bundle", f, []ed25519.PublicKey{pub}, "the signature is another bundle's, or the manifest was changed")

	// The predicate is checked against the manifest: a statement signed
	// by the right key whose claims differ from the manifest's.
	f = clone(genuine)
	var gm Manifest
	json.Unmarshal(f[ManifestFile], &gm)
	gm.Verdict = report.VerdictFail
	f[AttestationFile], _ = attest(f, gm, key)
	expect("a predicate that differs from the manifest", f, []ed25519.PublicKey{pub}, "the signed verdict is FAIL, the manifest says PASS")
}

// TestKeyFilesNeverQuoted: a key file that is not a key is refused with
// an error that does not quote it.
func TestKeyFilesNeverQuoted(t *testing.T) {
	priv, pub, _, _ := GenerateKey()
	if _, err := ParsePublicKey(priv); err == nil || strings.Contains(err.Error(), "MII") {
		t.Errorf("a private key given as public: %v", err)
	}
	if _, err := ParsePrivateKey(pub); err == nil || strings.Contains(err.Error(), "MC") {
		t.Errorf("a public key given as private: %v", err)
	}
	secret := []byte("-----BEGIN PRIVATE KEY-----\nc2VjcmV0LXNlY3JldC1zZWNyZXQ=\n-----END PRIVATE KEY-----\n")
	if _, err := ParsePrivateKey(secret); err == nil || strings.Contains(err.Error(), "c2Vj") {
		t.Errorf("a broken private key: %v", err)
	}
}

// TestSignatureVerifiesWithOpenSSL: the key files are the PEM forms
// openssl reads, and the signature is plain Ed25519 over DSSE's PAE of
// the in-toto payload: openssl verifies it with the public key alone, and
// refuses it over an edited payload.
func TestSignatureVerifiesWithOpenSSL(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("no openssl here")
	}
	privPEM, pubPEM, _, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ParsePrivateKey(privPEM)
	files, err := Read(writeTestBundle(t, "https://staging.acme.example", report.VerdictPass, key))
	if err != nil {
		t.Fatal(err)
	}
	var e Envelope
	if err := json.Unmarshal(files[AttestationFile], &e); err != nil || e.PayloadType != PayloadType {
		t.Fatalf("envelope: %v %+v", err, e)
	}
	body, _ := base64.StdEncoding.DecodeString(e.Payload)
	var st map[string]any
	if err := json.Unmarshal(body, &st); err != nil || st["_type"] != StatementType || st["predicateType"] != PredicateType {
		t.Fatalf("statement: %v %.200s", err, body)
	}
	sig, _ := base64.StdEncoding.DecodeString(e.Signatures[0].Sig)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o600)
		return p
	}
	pub, sigFile := write("key.pub", pubPEM), write("sig", sig)
	verify := func(msg []byte) ([]byte, error) {
		return exec.Command("openssl", "pkeyutl", "-verify", "-pubin", "-inkey", pub, "-rawin",
			"-in", write("pae", msg), "-sigfile", sigFile).CombinedOutput()
	}
	if out, err := verify(PAE(PayloadType, body)); err != nil {
		t.Fatalf("openssl does not verify the signature: %v\n%s", err, out)
	}
	if out, err := verify(PAE(PayloadType, append(body, ' '))); err == nil {
		t.Errorf("openssl verified an edited payload:\n%s", out)
	}
}
