// Package bundle writes and verifies certification bundles: one .tar.gz
// with a run's reports, its console log, the fleet without its secrets and
// a manifest that names the product, the harness, the catalog and the
// texts it was built from, with a SHA-256 of every file, and, when a key
// signed it, an attestation (attest.go) that binds all of it to the key's
// holder. Anyone can check a bundle with gwconform verify; nothing in it
// can sign a request.
package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
)

// FormatVersion is the bundle layout this package writes and reads.
const FormatVersion = "gwconform-bundle/1"

// Names of the files in a bundle besides the reports, which are
// report.Writers' files under their own names (report.JSONFile, ...).
const (
	ManifestFile = "manifest.json"
	ConsoleFile  = "console.log"
	FleetFile    = "fleet.yaml"
	BaselineFile = "baseline.yaml"
)

// Modes of a run. Only a certified run's bundle is a certification.
const (
	ModeCertified = "certified"
	ModeOrdinary  = "ordinary"
)

// Manifest says what a bundle is. Files maps every other file of the
// bundle to its SHA-256.
type Manifest struct {
	Format  string  `json:"format"`
	Mode    string  `json:"mode"`
	Product Product `json:"product"`
	Harness Harness `json:"harness"`
	Catalog Catalog `json:"catalog"`
	// Sources are the SHA-256 of the texts the catalog was built from.
	Sources Sources `json:"sources"`
	// FleetSHA256 is the hash of the fleet as bundled (secrets removed).
	FleetSHA256 string    `json:"fleet_sha256"`
	Seed        int64     `json:"seed"`
	Target      string    `json:"target"`
	StartedAt   time.Time `json:"started_at"`
	EndedAt     time.Time `json:"ended_at"`
	// Verdict and FailOn are the run's, as report.json has them.
	Verdict string `json:"verdict"`
	FailOn  string `json:"fail_on"`
	// Effects is "observed", or the one line saying that the effects of
	// the run's requests were not observed and why; Observer the base URL
	// that showed them. NoObserver records --no-observer: a certified run
	// without an observer was certified so on purpose.
	Effects    string `json:"effects"`
	Observer   string `json:"observer,omitempty"`
	NoObserver bool   `json:"no_observer,omitempty"`
	// Model is the model-based phase's seed and budget, as report.json
	// has them (absent when the phase did not run).
	Model *ModelBudget      `json:"model_phase,omitempty"`
	Files map[string]string `json:"files"`
}

// ModelBudget is what a bundle records of the model-based phase: the seed
// that draws its sequences and the budget that bounds them.
type ModelBudget struct {
	Seed       int64   `json:"seed"`
	Operations int     `json:"budget_operations"`
	Seconds    float64 `json:"budget_seconds"`
}

// EffectsObserved is the manifest's Effects when an observer showed them.
const EffectsObserved = "observed"

// Product is the implementation under test, as its vendor names it.
type Product struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Harness is the gwconform that ran.
type Harness struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"go_version"`
}

// Catalog is the catalog of checks that judged the run.
type Catalog struct {
	Version string `json:"version"`
	Hash    string `json:"hash"`
}

// Sources are the published interface and CONTRACT hashes.
type Sources struct {
	Interface string `json:"interface_sha256"`
	Contract  string `json:"contract_sha256"`
}

// Input is what Write bundles.
type Input struct {
	Manifest Manifest
	// ReportDir holds the run's reports, a file of each report.Writers.
	ReportDir string
	Console   []byte
	Fleet     *fleet.Fleet
	// Baseline, when not nil, is the baseline file the run used.
	Baseline []byte
	// SignKey, when set, signs the bundle: an attestation (attest.go)
	// of every file and of the manifest's claims.
	SignKey ed25519.PrivateKey
}

// Write writes the bundle at path. Every file is cleaned of the fleet's
// api keys and secrets and of any sign before it is hashed and written.
func Write(path string, in Input) error {
	files := map[string][]byte{}
	for _, w := range report.Writers {
		b, err := os.ReadFile(filepath.Join(in.ReportDir, w.File))
		if err != nil {
			return fmt.Errorf("bundle: %w", err)
		}
		files[w.File] = b
	}
	files[ConsoleFile] = in.Console
	fy, err := redactedFleet(in.Fleet)
	if err != nil {
		return err
	}
	files[FleetFile] = fy
	if in.Baseline != nil {
		files[BaselineFile] = in.Baseline
	}
	secretValues, keys := credentials(in.Fleet)
	m := in.Manifest
	m.Format = FormatVersion
	m.Files = map[string]string{}
	for name, b := range files {
		b = Scrub(b, secretValues, keys)
		files[name] = b
		m.Files[name] = sum(b)
	}
	m.FleetSHA256 = m.Files[FleetFile]
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	files[ManifestFile] = append(mb, '\n')
	if in.SignKey != nil {
		if files[AttestationFile], err = attest(files, m, in.SignKey); err != nil {
			return err
		}
	}
	return writeTarGz(path, files)
}

// Markers that stand in a bundle for what it must not carry. They are
// plain words, safe in JSON, XML, HTML and YAML alike.
const (
	RedactedAPIKey = "API_KEY_REDACTED"
	RedactedSecret = "SECRET_REDACTED"
	RedactedSign   = "SIGNATURE_REDACTED"
)

// secrets are the fleet's secrets, which must appear nowhere, and its api
// keys, each longest first.
func credentials(f *fleet.Fleet) (secretValues, keys []string) {
	for _, a := range f.Accounts {
		for _, k := range a.APIKeys {
			if len(k.Secret) >= 6 {
				secretValues = append(secretValues, k.Secret)
			}
			if len(k.Key) >= 4 {
				keys = append(keys, k.Key)
			}
		}
	}
	longest := func(v []string) { sort.Slice(v, func(i, j int) bool { return len(v[i]) > len(v[j]) }) }
	longest(secretValues)
	longest(keys)
	return secretValues, keys
}

// replaceWord replaces whole occurrences of w: not inside a longer word or
// identifier, so that a check ID such as fleet.command.other-key-on-this-
// account keeps its name when an api key is called other-key.
func replaceWord(s, w, marker string) string {
	word := func(c byte) bool {
		return c == '_' || c == '-' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	var b strings.Builder
	for {
		i := strings.Index(s, w)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(w)
		if (i > 0 && word(s[i-1])) || (end < len(s) && word(s[end])) {
			b.WriteString(s[:end])
		} else {
			b.WriteString(s[:i] + marker)
		}
		s = s[end:]
	}
}

// inAnyEncoding matches a field's value wherever a report writes a body: raw
// JSON or XML, a body inside a JSON string (\"name\":\"v\"), and HTML- or
// XML-escaped (&#34;name&#34;, &quot;name&quot;, &lt;name&gt;). Group 2 is
// the value.
func inAnyEncoding(name string) *regexp.Regexp {
	q := `(?:\\?"|\\?&#34;|\\?&quot;)`
	lt, gt := `(?:<|&lt;|\\u003c)`, `(?:>|&gt;|\\u003e)`
	return regexp.MustCompile(`(?i)(` + q + name + q + `\s*:\s*` + q + `|` + lt + name + gt + `)([^"\\&<]*)`)
}

var (
	apiKeyAnywhere = inAnyEncoding("api_key")
	secretAnywhere = inAnyEncoding("secret")
	signAnywhere   = inAnyEncoding("sign")
)

// Scrub replaces every api_key, secret and sign value in b, in whatever
// encoding, by its marker; every fleet secret wherever it stands; and every
// fleet api key wherever it stands as a word of its own.
func Scrub(b []byte, secretValues, keys []string) []byte {
	s := string(b)
	for _, v := range secretValues {
		s = strings.ReplaceAll(s, v, RedactedSecret)
	}
	s = apiKeyAnywhere.ReplaceAllString(s, "${1}"+RedactedAPIKey)
	s = secretAnywhere.ReplaceAllString(s, "${1}"+RedactedSecret)
	s = signAnywhere.ReplaceAllString(s, "${1}"+RedactedSign)
	for _, k := range keys {
		s = replaceWord(s, k, RedactedAPIKey)
	}
	return []byte(s)
}

// leaks finds a credential value left in b: a value of an api_key, secret
// or sign field that is not a marker.
func leaks(b []byte) string {
	for _, p := range []struct {
		re     *regexp.Regexp
		allows []string
	}{
		{apiKeyAnywhere, []string{RedactedAPIKey}},
		{secretAnywhere, []string{RedactedSecret}},
		{signAnywhere, []string{RedactedSign, client.SignMarker, "SIGNATURE&gt;", "&lt;SIGNATURE&gt;"}},
	} {
		for _, m := range p.re.FindAllSubmatch(b, -1) {
			v := string(m[2])
			ok := v == ""
			for _, a := range p.allows {
				if v == a || strings.HasPrefix(a, v) {
					ok = true
				}
			}
			if !ok {
				return string(m[0])
			}
		}
	}
	return ""
}

// redactedFleet is the fleet as YAML with every secret and key replaced.
func redactedFleet(f *fleet.Fleet) ([]byte, error) {
	c := *f
	c.Accounts = make([]fleet.Account, len(f.Accounts))
	for i, a := range f.Accounts {
		a.APIKeys = append([]fleet.APIKey(nil), a.APIKeys...)
		for j := range a.APIKeys {
			a.APIKeys[j] = fleet.APIKey{Key: RedactedAPIKey, Secret: RedactedSecret}
		}
		c.Accounts[i] = a
	}
	b, err := c.Marshal()
	if err != nil {
		return nil, fmt.Errorf("bundle: fleet: %w", err)
	}
	return b, nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func writeTarGz(path string, files map[string][]byte) error {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b := files[n]
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	if err := safefile.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	return nil
}

// maxBundle bounds what Read takes in, so that a hostile archive cannot
// fill memory.
const maxBundle = 256 << 20

// Read reads every regular file of a bundle.
func Read(path string) (map[string][]byte, error) {
	f, err := safefile.Open(path, maxBundle)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s is not a gzip archive: %v", path, err)
	}
	tr := tar.NewReader(io.LimitReader(gz, maxBundle))
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s is not a tar archive: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("%s: %s is not a regular file", path, h.Name)
		}
		name := path2name(h.Name)
		if _, dup := files[name]; dup {
			return nil, fmt.Errorf("%s: %s appears twice", path, name)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", path, name, err)
		}
		files[name] = b
	}
	return files, nil
}

func path2name(n string) string { return path.Clean(strings.TrimPrefix(n, "./")) }
