package main

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gwdmi/gwtools/conformance"
	"github.com/gwdmi/gwtools/conformance/bundle"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/printable"
)

const verifyUsage = `Usage: gwconform verify FILE.tar.gz --key PUB [--key PUB]... [--accept-verdict V]...
       gwconform verify FILE.tar.gz --integrity-only

Checks a bundle written by gwconform run --bundle.

With --key (a public key written by gwconform keygen; several may be
given): the bundle's signature (gwconform run --sign-key) is by one of the
keys, and its signed statement covers every file of the bundle, byte for
byte, and says what the manifest says (verdict, target, product, mode,
observer, harness, catalog). Only then is the bundle authentic: written by
the key's holder and unchanged since.

In every case: every file's SHA-256 against the manifest, every count and
the verdict recomputed from the results, every check of this gwconform's
catalog present (a bundle of another catalog names the catalog it needs),
and, for a certified bundle, that nothing was filtered, skipped or left
uncovered, and that its baseline (if any) has no TODO, expires within 90
days of the run and excuses no MUST check. Without --key these show only
that the bundle is whole: anyone can write such a bundle, so verify says
"unsigned: integrity only" and exits 1, unless --integrity-only asks for
exactly that.

The bundle's MUST failures are listed first, then the checks its baseline
excused, its SHOULD failures and its observer.

A gate states what it accepts: --require-mode certified, --require-product
NAME, --require-version V and --require-key-id ID (the signer's key, with
--key) each must hold, or verify says which does not and exits 1.

Exit 0 only when every check holds, the bundle is authentic (or
--integrity-only), its verdict is PASS (or one --accept-verdict names:
PASS_WITH_KNOWN_FAILURES, FAIL, PARTIAL, INCOMPLETE) and every --require-*
holds; 1 otherwise; 2 on bad usage or an unreadable key.

Flags:
`

// verifyMain is gwconform verify.
func verifyMain(args []string, stdout, stderr io.Writer) int {
	a, code, ok := parseVerifyArgs(args, stderr)
	if !ok {
		return code
	}
	path := printable.String(a.path) // as printed; a.path is opened
	problems := bundle.Verify(a.path, verifyExpect())
	files, err := bundle.Read(a.path)
	signer := ""
	if err == nil && len(a.keys) > 0 {
		var sigProblems []string
		signer, sigProblems = bundle.VerifySignature(files, a.keys)
		// The signature's problems first: they say whether anything else
		// in the bundle can be believed.
		problems = append(sigProblems, problems...)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			// A problem quotes the bundle's own bytes (member names, key
			// IDs): escaped, they cannot draw a line of their own.
			fmt.Fprintf(stdout, "%s: %s\n", path, printable.String(p))
		}
		fmt.Fprintf(stdout, "%s: NOT VERIFIED (%d problem(s))\n", path, len(problems))
		return report.ExitFail
	}
	var m bundle.Manifest
	json.Unmarshal(files[bundle.ManifestFile], &m)
	doc, _ := report.Read(files[report.JSONFile], conformance.Catalog())
	must, known, should := failuresOf(doc)
	writeVerified(stdout, path, m, files, signer, len(known))
	writeBundleFailures(stdout, path, m, must, known, should)
	fmt.Fprintf(stdout, "%s: observer %s\n", path, printable.String(orNone(observerOf(m, doc))))
	if m.Effects != "" && m.Effects != bundle.EffectsObserved {
		fmt.Fprintf(stdout, "%s: %s\n", path, printable.String(m.Effects))
	}
	code = report.ExitPass
	if signer == "" && !a.integrityOnly {
		fmt.Fprintf(stdout, "%s: not authenticated: give the signer's public key with --key PUB (or --integrity-only to accept an unsigned bundle): exit 1\n", path)
		code = report.ExitFail
	}
	if m.Verdict != report.VerdictPass && !slices.Contains(a.accept, m.Verdict) {
		v := printable.String(m.Verdict)
		fmt.Fprintf(stdout, "%s: the verdict is %s, not PASS: exit 1 (--accept-verdict %s accepts it)\n", path, v, v)
		code = report.ExitFail
	}
	for _, miss := range a.unmet(m, signer) {
		fmt.Fprintf(stdout, "%s: %s: exit 1\n", path, miss)
		code = report.ExitFail
	}
	return code
}

// unmet lists the --require-* conditions the bundle does not meet, each a
// sentence with the bundle's value escaped.
func (a verifyArgs) unmet(m bundle.Manifest, signer string) []string {
	var out []string
	need := func(flag, want, got, what string) {
		if want != "" && got != want {
			out = append(out, fmt.Sprintf("%s %s: the bundle's %s is %s", flag, printable.String(want), what, printable.String(orNone(got))))
		}
	}
	need("--require-mode", a.mode, m.Mode, "mode")
	need("--require-product", a.product, m.Product.Name, "product")
	need("--require-version", a.version, m.Product.Version, "product version")
	if len(a.keyIDs) > 0 && !slices.Contains(a.keyIDs, signer) {
		out = append(out, fmt.Sprintf("--require-key-id %s: the bundle is signed by %s", printable.String(strings.Join(a.keyIDs, ", ")), printable.String(orNone(signer))))
	}
	return out
}

// verifyArgs are gwconform verify's arguments, read and checked.
type verifyArgs struct {
	path          string
	keys          []ed25519.PublicKey
	accept        listFlag
	integrityOnly bool
	// The gate's requirements (--require-*): exit 0 only when each holds.
	mode, product, version string
	keyIDs                 listFlag
}

// parseVerifyArgs reads gwconform verify's flags and its one bundle,
// which may come before the flags or after them, and reads the keys; when
// ok is false, verify exits with code.
func parseVerifyArgs(args []string, stderr io.Writer) (a verifyArgs, code int, ok bool) {
	fs := flag.NewFlagSet("gwconform verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var keyFiles listFlag
	fs.Var(&keyFiles, "key", "public key (PEM) whose signature makes the bundle authentic; repeat for several")
	fs.Var(&a.accept, "accept-verdict", "also exit 0 for this verdict (PASS_WITH_KNOWN_FAILURES, FAIL, PARTIAL, INCOMPLETE); repeatable")
	fs.StringVar(&a.mode, "require-mode", "", "exit 0 only for a bundle of this mode (certified or ordinary)")
	fs.StringVar(&a.product, "require-product", "", "exit 0 only for a bundle of this product name (the run's --product)")
	fs.StringVar(&a.version, "require-version", "", "exit 0 only for a bundle of this product version")
	fs.Var(&a.keyIDs, "require-key-id", "exit 0 only for a bundle signed by the key of this ID (SHA256:…, as verify and keygen print it); repeat for several; needs --key")
	fs.BoolVar(&a.integrityOnly, "integrity-only", false, "check an unsigned bundle's integrity only, and exit 0 on it: it shows nothing of who wrote the bundle")
	fs.Usage = func() { io.WriteString(stderr, verifyUsage); fs.PrintDefaults() }
	var paths []string
	for {
		if err := parseFlags(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return a, report.ExitPass, false
			}
			return a, report.ExitConfig, false
		}
		if fs.NArg() == 0 {
			break
		}
		paths = append(paths, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(paths) != 1 {
		fs.Usage()
		return a, report.ExitConfig, false
	}
	a.path = paths[0]
	if a.mode != "" && a.mode != bundle.ModeCertified && a.mode != bundle.ModeOrdinary {
		fmt.Fprintf(stderr, "gwconform verify: --require-mode %s: give %s or %s\n", printable.String(a.mode), bundle.ModeCertified, bundle.ModeOrdinary)
		return a, report.ExitConfig, false
	}
	if len(a.keyIDs) > 0 && len(keyFiles) == 0 {
		fmt.Fprintln(stderr, "gwconform verify: --require-key-id needs --key PUB: only a signature checked with a key names its signer")
		return a, report.ExitConfig, false
	}
	if len(keyFiles) > 0 && a.integrityOnly {
		fmt.Fprintln(stderr, "gwconform verify: --key and --integrity-only exclude each other")
		return a, report.ExitConfig, false
	}
	for _, v := range a.accept {
		switch v {
		case report.VerdictPassKnown, report.VerdictFail, report.VerdictPartial, report.VerdictIncomplete:
		default:
			fmt.Fprintf(stderr, "gwconform verify: --accept-verdict %q: give PASS_WITH_KNOWN_FAILURES, FAIL, PARTIAL or INCOMPLETE\n", v)
			return a, report.ExitConfig, false
		}
	}
	for _, kf := range keyFiles {
		k, err := readVerifyKey(kf)
		if err != nil {
			fmt.Fprintln(stderr, "gwconform verify: --key:", err)
			return a, report.ExitConfig, false
		}
		a.keys = append(a.keys, k)
	}
	return a, 0, true
}

// failuresOf sorts the bundle's failures: MUST, those the baseline
// excused (known), and SHOULD.
func failuresOf(doc report.Document) (must, known, should []report.Result) {
	for _, r := range doc.Results {
		switch {
		case r.Outcome == report.ExpectedFailure:
			known = append(known, r)
		case r.Outcome != report.Failed && r.Outcome != report.Interrupted:
		case r.Level == string(check.Must):
			must = append(must, r)
		case r.Level == string(check.Should):
			should = append(should, r)
		}
	}
	return must, known, should
}

// writeVerified says what the bundle is and who signed it, or that it is
// whole but unsigned: hashes show only that nothing was damaged by
// accident, since whoever writes a bundle can write its hashes.
func writeVerified(w io.Writer, path string, m bundle.Manifest, files map[string][]byte, signer string, known int) {
	what := printable.String(fmt.Sprintf("%s run of %s %s against %s, verdict %s, catalog %s, gwconform %s",
		m.Mode, orNone(m.Product.Name), orNone(m.Product.Version), m.Target, report.VerdictText(m.Verdict, known), m.Catalog.Version, m.Harness.Version))
	if signer != "" {
		if m.Verdict != report.VerdictPass {
			// The bundle is genuine; the run it records did not pass: a
			// line that opens on "verified" would read as a pass.
			fmt.Fprintf(w, "%s: genuine record of a run that did not pass (verdict %s): %s; signed by key %s\n",
				path, report.VerdictText(m.Verdict, known), what, printable.String(signer))
			return
		}
		fmt.Fprintf(w, "%s: verified: %s; signed by key %s\n", path, what, printable.String(signer))
		return
	}
	sig := "it carries no signature"
	if id := bundle.SignerOf(files); id != "" {
		sig = "it says it is signed by key " + printable.String(id) + ", which no --key was given to check"
	}
	fmt.Fprintf(w, "%s: unsigned: integrity only (%s): the files are whole and agree with each other, but nothing shows who wrote them: %s\n", path, sig, what)
}

// writeBundleFailures names the MUST failures, the failures the baseline
// excused (part of the verdict) and the SHOULD failures, each with a
// sentence true of this run: a SHOULD failure changes the verdict only
// with --fail-on should, and is named so that a PASS is not read as "no
// failure".
func writeBundleFailures(w io.Writer, path string, m bundle.Manifest, must, known, should []report.Result) {
	listFailures(w, path, "MUST", must, "each fails the run")
	if len(known) > 0 {
		fmt.Fprintf(w, "%s: %d known failure(s), excused by the run's baseline (%s):\n", path, len(known), bundle.BaselineFile)
		for _, r := range known {
			fmt.Fprintf(w, "  %-6s %s: %s\n", r.Level, printable.String(r.ID), printable.String(r.Reason))
		}
	}
	if len(should) > 0 {
		why := "this run was judged with --fail-on should: they fail it"
		if m.FailOn != "should" {
			why = fmt.Sprintf("this run was judged with --fail-on %s: they do not change its verdict; with --fail-on should they would fail it", orNone(m.FailOn))
		}
		listFailures(w, path, "SHOULD", should, "CONTRACT; "+why)
	}
}

// listFailures names the failed checks of a level, at most
// report.MaxListed of them.
func listFailures(w io.Writer, path, level string, rs []report.Result, why string) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(w, "%s: %d %s failure(s) (%s):\n", path, len(rs), level, why)
	for i, r := range rs {
		if i == report.MaxListed {
			fmt.Fprintf(w, "  ... and %d more (report.html in the bundle)\n", len(rs)-i)
			break
		}
		fmt.Fprintf(w, "  %s: %s\n", printable.String(r.ID), printable.String(firstLine(r.Failure)))
	}
}

func orNone(s string) string {
	if s == "" {
		return "(unnamed)"
	}
	return s
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// observerOf is the observer a bundle's run used: report.json names it
// (or "none"); a bundle of an older gwconform has it in its manifest.
func observerOf(m bundle.Manifest, doc report.Document) string {
	switch {
	case doc.Observer != "":
		return doc.Observer
	case m.Observer != "":
		return m.Observer
	case m.NoObserver || m.Effects != "" && m.Effects != bundle.EffectsObserved:
		return report.ObserverNone
	}
	return ""
}
