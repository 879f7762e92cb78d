package bundle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
)

// A signed bundle carries a DSSE envelope (github.com/secure-systems-lab/
// dsse, "Dead Simple Signing Envelope"): a payload, its type, and
// signatures over the payload's pre-authentication encoding (PAE), so that
// a signature of one payload type is never taken for another's. The
// payload is an in-toto Statement (attest.go). Both formats are small and
// public; they are written here with the standard library's Ed25519.

// Envelope is a DSSE envelope: Payload is base64 of the signed bytes.
type Envelope struct {
	PayloadType string      `json:"payloadType"`
	Payload     string      `json:"payload"`
	Signatures  []Signature `json:"signatures"`
}

// Signature is one signature of an envelope: KeyID names the key (KeyID),
// Sig is base64 of the Ed25519 signature of PAE(PayloadType, payload).
type Signature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"`
}

// PAE is DSSE's pre-authentication encoding of a payload and its type:
// "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, each LEN the byte
// count in ASCII decimal.
func PAE(payloadType string, body []byte) []byte {
	var b bytes.Buffer
	b.WriteString("DSSEv1 ")
	b.WriteString(strconv.Itoa(len(payloadType)))
	b.WriteByte(' ')
	b.WriteString(payloadType)
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteByte(' ')
	b.Write(body)
	return b.Bytes()
}

// signEnvelope signs body as a payload of payloadType with key.
func signEnvelope(payloadType string, body []byte, key ed25519.PrivateKey) Envelope {
	sig := ed25519.Sign(key, PAE(payloadType, body))
	return Envelope{PayloadType: payloadType, Payload: base64.StdEncoding.EncodeToString(body),
		Signatures: []Signature{{KeyID: KeyID(key.Public().(ed25519.PublicKey)), Sig: base64.StdEncoding.EncodeToString(sig)}}}
}

// decodeBase64 takes standard or URL-safe base64, padded or not, as DSSE
// allows.
func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// openEnvelope checks the envelope's signatures against keys and returns
// its payload and the ID of the key that signed it. The error names what
// does not match: no signature, no signature by any of the keys, or a
// signature by one of them that does not match the payload.
func openEnvelope(e Envelope, payloadType string, keys []ed25519.PublicKey) (body []byte, keyID string, err error) {
	if e.PayloadType != payloadType {
		return nil, "", fmt.Errorf("its payloadType is %q, not %q", e.PayloadType, payloadType)
	}
	body, err = decodeBase64(e.Payload)
	if err != nil {
		return nil, "", errors.New("its payload is not base64")
	}
	if len(e.Signatures) == 0 {
		return nil, "", errors.New("it holds no signature")
	}
	msg := PAE(e.PayloadType, body)
	var signedBy, given []string
	for _, k := range keys {
		given = append(given, KeyID(k))
	}
	for _, s := range e.Signatures {
		signedBy = append(signedBy, s.KeyID)
		sig, err := decodeBase64(s.Sig)
		if err != nil || len(sig) != ed25519.SignatureSize {
			continue
		}
		for _, k := range keys {
			if ed25519.Verify(k, msg, sig) {
				return body, KeyID(k), nil
			}
		}
	}
	for _, s := range e.Signatures {
		for _, id := range given {
			if s.KeyID == id {
				return nil, "", fmt.Errorf("its signature by key %s does not match what it signs: the signed statement or the signature was changed after signing", id)
			}
		}
	}
	return nil, "", fmt.Errorf("it is signed by key %s, which is not a key given with --key (%s): it was signed by someone else", joinIDs(signedBy), joinIDs(given))
}

func joinIDs(ids []string) string {
	if len(ids) == 0 {
		return "(none)"
	}
	s := ids[0]
	for _, id := range ids[1:] {
		s += ", " + id
	}
	return s
}

// KeyID names a public key: "SHA256:" and the hex SHA-256 of its PKIX
// (DER) encoding, the bytes of its PEM file.
func KeyID(pub ed25519.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "SHA256:?"
	}
	h := sha256.Sum256(der)
	return "SHA256:" + hex.EncodeToString(h[:])
}

// GenerateKey makes an Ed25519 key pair as PEM: the private key in PKCS#8
// ("PRIVATE KEY"), the public key in PKIX ("PUBLIC KEY"), the forms
// openssl reads and writes.
func GenerateKey() (private, public []byte, id string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, "", err
	}
	pk, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, "", err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, nil, "", err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), KeyID(pub), nil
}

// ParsePrivateKey reads an Ed25519 private key in PEM (PKCS#8). Its error
// never quotes the file.
func ParsePrivateKey(b []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("not a PEM \"PRIVATE KEY\" (write one with gwconform keygen)")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, errors.New("its PRIVATE KEY block is not PKCS#8")
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an Ed25519 key", k)
	}
	return priv, nil
}

// ParsePublicKey reads an Ed25519 public key in PEM (PKIX).
func ParsePublicKey(b []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("not a PEM \"PUBLIC KEY\" (gwconform keygen writes one as NAME.pub)")
	}
	if block.Type == "PRIVATE KEY" {
		return nil, errors.New("a private key: give the public one (NAME.pub); the private key stays with whoever signs")
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("a PEM %q, not a \"PUBLIC KEY\"", block.Type)
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, errors.New("its PUBLIC KEY block does not parse")
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an Ed25519 key", k)
	}
	return pub, nil
}

// marshalEnvelope is the envelope as the bundle's file.
func marshalEnvelope(e Envelope) []byte {
	b, _ := json.MarshalIndent(e, "", "  ")
	return append(b, '\n')
}
