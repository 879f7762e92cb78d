package main

import (
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/gwdmi/gwtools/conformance/bundle"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
)

const keygenUsage = `Usage: gwconform keygen --out NAME

Writes a new Ed25519 key pair for signing certification bundles: NAME, the
private key (PEM, PKCS#8, mode 0600: keep it secret, give it to
gwconform run --sign-key), and NAME.pub, the public key (PEM, PKIX: give it
to whoever verifies, for gwconform verify --key). An existing NAME or
NAME.pub is never overwritten. The key's ID (SHA256: and the hash of the
public key) is printed; the private key never is.

Flags:
`

// maxKeyFile bounds a key file read (a PEM key is a few hundred bytes).
const maxKeyFile = 64 << 10

// keygenMain is gwconform keygen.
func keygenMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gwconform keygen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "name of the private key file; the public key goes to NAME.pub")
	fs.Usage = func() { io.WriteString(stderr, keygenUsage); fs.PrintDefaults() }
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return report.ExitPass
		}
		return report.ExitConfig
	}
	if fs.NArg() > 0 || *out == "" {
		fmt.Fprintln(stderr, "gwconform keygen: give --out NAME (and nothing else): NAME gets the private key, NAME.pub the public key")
		return report.ExitConfig
	}
	for _, p := range []string{*out, *out + ".pub"} {
		if _, err := os.Lstat(p); err == nil {
			fmt.Fprintf(stderr, "gwconform keygen: %s exists; a key is never overwritten: remove it or choose another --out\n", p)
			return report.ExitConfig
		}
	}
	priv, pub, id, err := bundle.GenerateKey()
	if err != nil {
		fmt.Fprintln(stderr, "gwconform keygen:", err)
		return report.ExitConfig
	}
	if err := safefile.WriteFile(*out, priv, 0o600); err != nil {
		fmt.Fprintln(stderr, "gwconform keygen:", err)
		return report.ExitConfig
	}
	if err := safefile.WriteFile(*out+".pub", pub, 0o644); err != nil {
		os.Remove(*out)
		fmt.Fprintln(stderr, "gwconform keygen:", err)
		return report.ExitConfig
	}
	fmt.Fprintf(stdout, "gwconform keygen: wrote %s (private key, mode 0600: keep it secret) and %s.pub (public key), key %s\n", *out, *out, id)
	return report.ExitPass
}

// readSignKey reads the private key of --sign-key. Its errors name the
// file, never its content; a key others may read is refused, as ssh does.
func readSignKey(path string) (ed25519.PrivateKey, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode().IsRegular() && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by others (mode %04o): a signing key is a secret; chmod 600 %s", path, st.Mode().Perm(), path)
	}
	b, err := safefile.ReadFile(path, maxKeyFile)
	if err != nil {
		return nil, err
	}
	k, err := bundle.ParsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return k, nil
}

// readVerifyKey reads a public key of --key.
func readVerifyKey(path string) (ed25519.PublicKey, error) {
	b, err := safefile.ReadFile(path, maxKeyFile)
	if err != nil {
		return nil, err
	}
	k, err := bundle.ParsePublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return k, nil
}
