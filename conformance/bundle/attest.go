package bundle

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gwdmi/gwtools/conformance/report"
)

// A signed bundle carries AttestationFile: a DSSE envelope (dsse.go) whose
// payload is an in-toto Statement v1 (https://in-toto.io/Statement/v1).
// Its subject is every other file of the bundle, the manifest included,
// each with its SHA-256; its predicate is what the bundle certifies: the
// verdict, target, product, mode, observer, harness and catalog. The
// signature binds them to the key's holder: a bundle edited in any byte,
// signed again with another key, or given the signature of another bundle
// no longer verifies with the holder's public key.
const (
	AttestationFile = "attestation.dsse.json"
	// StatementType is the in-toto Statement's _type.
	StatementType = "https://in-toto.io/Statement/v1"
	// PayloadType is the DSSE payload type of an in-toto Statement.
	PayloadType = "application/vnd.in-toto+json"
	// PredicateType names the predicate below, version 1.
	PredicateType = "https://github.com/gwdmi/gwtools/blob/main/docs/certification.md#predicate-v1"
)

// Statement is an in-toto Statement v1.
type Statement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     Predicate `json:"predicate"`
}

// Subject is a file of the bundle and its digests.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Predicate is what a signed bundle certifies, as its manifest says it.
type Predicate struct {
	Verdict    string    `json:"verdict"`
	Target     string    `json:"target"`
	Product    Product   `json:"product"`
	Mode       string    `json:"mode"`
	Observer   string    `json:"observer,omitempty"`
	NoObserver bool      `json:"no_observer,omitempty"`
	Harness    Harness   `json:"harness"`
	Catalog    Catalog   `json:"catalog"`
	Seed       int64     `json:"seed"`
	StartedAt  time.Time `json:"started_at"`
	EndedAt    time.Time `json:"ended_at"`
}

func predicateOf(m Manifest) Predicate {
	return Predicate{Verdict: m.Verdict, Target: m.Target, Product: m.Product, Mode: m.Mode, Observer: m.Observer,
		NoObserver: m.NoObserver, Harness: m.Harness, Catalog: m.Catalog, Seed: m.Seed, StartedAt: m.StartedAt, EndedAt: m.EndedAt}
}

// attest signs the bundle's files (every one but the attestation) and the
// manifest's claims with key, and returns the attestation file.
func attest(files map[string][]byte, m Manifest, key ed25519.PrivateKey) ([]byte, error) {
	st := Statement{Type: StatementType, PredicateType: PredicateType, Predicate: predicateOf(m)}
	for _, name := range sortedNames(files) {
		if name == AttestationFile {
			continue
		}
		st.Subject = append(st.Subject, Subject{Name: name, Digest: map[string]string{"sha256": sum(files[name])}})
	}
	body, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("bundle: attestation: %w", err)
	}
	return marshalEnvelope(signEnvelope(PayloadType, body, key)), nil
}

// Attest signs a bundle's files as they are, with the claims of their
// manifest, and returns the attestation file (AttestationFile) to add.
func Attest(files map[string][]byte, key ed25519.PrivateKey) ([]byte, error) {
	var m Manifest
	if err := json.Unmarshal(files[ManifestFile], &m); err != nil {
		return nil, fmt.Errorf("bundle: %s: %w", ManifestFile, err)
	}
	return attest(files, m, key)
}

// Signed says whether a bundle's files carry an attestation.
func Signed(files map[string][]byte) bool {
	_, ok := files[AttestationFile]
	return ok
}

// SignerOf is the key ID the bundle's attestation names, unchecked, or ""
// when it has none or it does not parse.
func SignerOf(files map[string][]byte) string {
	var e Envelope
	if json.Unmarshal(files[AttestationFile], &e) != nil || len(e.Signatures) == 0 {
		return ""
	}
	return e.Signatures[0].KeyID
}

// VerifySignature checks a bundle's attestation against the public keys:
// it is signed by one of them, its statement is an in-toto Statement of
// this predicate, its subject is exactly the bundle's other files with
// their SHA-256, and its predicate says what the manifest and report.json
// say. It returns the ID of the key that signed it and one line per
// problem, each naming what does not match.
func VerifySignature(files map[string][]byte, keys []ed25519.PublicKey) (keyID string, problems []string) {
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	raw, ok := files[AttestationFile]
	if !ok {
		return "", []string{"the bundle is not signed: it has no " + AttestationFile + " (gwconform run --sign-key KEY writes one)"}
	}
	var e Envelope
	if err := json.Unmarshal(raw, &e); err != nil {
		return "", []string{AttestationFile + " is not a DSSE envelope: " + err.Error()}
	}
	body, keyID, err := openEnvelope(e, PayloadType, keys)
	if err != nil {
		return "", []string{AttestationFile + ": " + err.Error()}
	}
	var st Statement
	if err := json.Unmarshal(body, &st); err != nil {
		return keyID, []string{AttestationFile + ": the signed statement does not parse: " + err.Error()}
	}
	if st.Type != StatementType {
		bad("the signed statement's _type is %q, not %q", st.Type, StatementType)
	}
	if st.PredicateType != PredicateType {
		bad("the signed statement's predicateType is %q, not %q", st.PredicateType, PredicateType)
	}

	// The subject is every other file, with its digest.
	signed := map[string]string{}
	for _, s := range st.Subject {
		if _, dup := signed[s.Name]; dup {
			bad("the signed statement names %s twice", s.Name)
		}
		signed[s.Name] = s.Digest["sha256"]
	}
	for _, name := range sortedNames(files) {
		if name == AttestationFile {
			continue
		}
		want, ok := signed[name]
		switch {
		case !ok:
			bad("%s is in the bundle but not in the signed statement: it was added after signing", name)
		case want != sum(files[name]):
			bad("%s has SHA-256 %s, the signed statement says %s: it is not the file that was signed", name, sum(files[name]), want)
		}
	}
	for _, s := range st.Subject {
		if _, ok := files[s.Name]; !ok {
			bad("%s is in the signed statement but not in the bundle", s.Name)
		}
	}
	if d, ok := signed[ManifestFile]; ok && d != sum(files[ManifestFile]) {
		bad("the signed manifest is not this bundle's: the signature is another bundle's, or the manifest was changed after signing")
	}

	// The predicate says what the manifest and the report say.
	var m Manifest
	if err := json.Unmarshal(files[ManifestFile], &m); err != nil {
		bad("%s does not parse: %v", ManifestFile, err)
		return keyID, problems
	}
	p, want := st.Predicate, predicateOf(m)
	field := func(name string, signed, manifest any) {
		if fmt.Sprint(signed) != fmt.Sprint(manifest) {
			bad("the signed %s is %v, the manifest says %v", name, signed, manifest)
		}
	}
	field("verdict", p.Verdict, want.Verdict)
	field("target", p.Target, want.Target)
	field("product", p.Product.Name+" "+p.Product.Version, want.Product.Name+" "+want.Product.Version)
	field("mode", p.Mode, want.Mode)
	field("observer", p.Observer, want.Observer)
	field("no_observer", p.NoObserver, want.NoObserver)
	field("harness version", p.Harness.Version, want.Harness.Version)
	field("harness commit", p.Harness.Commit, want.Harness.Commit)
	field("catalog version", p.Catalog.Version, want.Catalog.Version)
	field("catalog hash", p.Catalog.Hash, want.Catalog.Hash)
	field("seed", p.Seed, want.Seed)
	if !p.StartedAt.Equal(want.StartedAt) || !p.EndedAt.Equal(want.EndedAt) {
		bad("the signed run time %s to %s is not the manifest's %s to %s", p.StartedAt, p.EndedAt, want.StartedAt, want.EndedAt)
	}
	var doc report.Document
	if err := json.Unmarshal(files[report.JSONFile], &doc); err == nil {
		if doc.Verdict != p.Verdict {
			bad("the signed verdict is %s, %s says %s", p.Verdict, report.JSONFile, doc.Verdict)
		}
		if doc.Target != p.Target {
			bad("the signed target is %s, %s says %s", p.Target, report.JSONFile, doc.Target)
		}
	}
	return keyID, problems
}
