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

Exit 0 only when every check holds, the bundle is authentic (or
--integrity-only) and its verdict is PASS (or one --accept-verdict names:
PASS_WITH_KNOWN_FAILURES, FAIL, PARTIAL, INCOMPLETE); 1 otherwise; 2 on bad
usage or an unreadable key.

Flags:
`

// verifyMain is gwconform verify.
func verifyMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gwconform verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var keyFiles, accept listFlag
	fs.Var(&keyFiles, "key", "public key (PEM) whose signature makes the bundle authentic; repeat for several")
	fs.Var(&accept, "accept-verdict", "also exit 0 for this verdict (PASS_WITH_KNOWN_FAILURES, FAIL, PARTIAL, INCOMPLETE); repeatable")
	integrityOnly := fs.Bool("integrity-only", false, "check an unsigned bundle's integrity only, and exit 0 on it: it shows nothing of who wrote the bundle")
	fs.Usage = func() { io.WriteString(stderr, verifyUsage); fs.PrintDefaults() }
	// The bundle may come before the flags or after them.
	var paths []string
	for {
		if err := parseFlags(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return report.ExitPass
			}
			return report.ExitConfig
		}
		if fs.NArg() == 0 {
			break
		}
		paths = append(paths, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(paths) != 1 {
		fs.Usage()
		return report.ExitConfig
	}
	path := paths[0]
	if len(keyFiles) > 0 && *integrityOnly {
		fmt.Fprintln(stderr, "gwconform verify: --key and --integrity-only exclude each other")
		return report.ExitConfig
	}
	for _, v := range accept {
		switch v {
		case report.VerdictPassKnown, report.VerdictFail, report.VerdictPartial, report.VerdictIncomplete:
		default:
			fmt.Fprintf(stderr, "gwconform verify: --accept-verdict %q: give PASS_WITH_KNOWN_FAILURES, FAIL, PARTIAL or INCOMPLETE\n", v)
			return report.ExitConfig
		}
	}
	var keys []ed25519.PublicKey
	for _, kf := range keyFiles {
		k, err := readVerifyKey(kf)
		if err != nil {
			fmt.Fprintln(stderr, "gwconform verify: --key:", err)
			return report.ExitConfig
		}
		keys = append(keys, k)
	}
	problems := bundle.Verify(path, verifyExpect())
	files, err := bundle.Read(path)
	signer := ""
	if err == nil && len(keys) > 0 {
		var sigProblems []string
		signer, sigProblems = bundle.VerifySignature(files, keys)
		// The signature's problems first: they say whether anything else
		// in the bundle can be believed.
		problems = append(sigProblems, problems...)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(stdout, "%s: %s\n", path, p)
		}
		fmt.Fprintf(stdout, "%s: NOT VERIFIED (%d problem(s))\n", path, len(problems))
		return report.ExitFail
	}
	var m bundle.Manifest
	json.Unmarshal(files[bundle.ManifestFile], &m)
	var doc report.Document
	json.Unmarshal(files[report.JSONFile], &doc)
	var must, known, should []report.Result
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
	what := printable.String(fmt.Sprintf("%s run of %s %s against %s, verdict %s, catalog %s, gwconform %s",
		m.Mode, orNone(m.Product.Name), orNone(m.Product.Version), m.Target, report.VerdictText(m.Verdict, len(known)), m.Catalog.Version, m.Harness.Version))
	authentic := signer != ""
	if authentic {
		fmt.Fprintf(stdout, "%s: verified: %s; signed by key %s\n", path, what, signer)
	} else {
		// Hashes show only that nothing was damaged by accident: whoever
		// writes a bundle can write its hashes.
		sig := "it carries no signature"
		if id := bundle.SignerOf(files); id != "" {
			sig = "it says it is signed by key " + id + ", which no --key was given to check"
		}
		fmt.Fprintf(stdout, "%s: unsigned: integrity only (%s): the files are whole and agree with each other, but nothing shows who wrote them: %s\n", path, sig, what)
	}
	listFailures(stdout, path, "MUST", must, "each fails the run")
	// The failures a baseline excused are part of the verdict: each is named.
	if len(known) > 0 {
		fmt.Fprintf(stdout, "%s: %d known failure(s), excused by the run's baseline (%s):\n", path, len(known), bundle.BaselineFile)
		for _, r := range known {
			fmt.Fprintf(stdout, "  %-6s %s: %s\n", r.Level, printable.String(r.ID), printable.String(r.Reason))
		}
	}
	// A SHOULD failure changes the verdict only with --fail-on should:
	// each is named, so that a PASS is not read as "no failure", with a
	// sentence true of this run.
	if len(should) > 0 {
		why := "this run was judged with --fail-on should: they fail it"
		if m.FailOn != "should" {
			why = fmt.Sprintf("this run was judged with --fail-on %s: they do not change its verdict; with --fail-on should they would fail it", orNone(m.FailOn))
		}
		listFailures(stdout, path, "SHOULD", should, "CONTRACT; "+why)
	}
	fmt.Fprintf(stdout, "%s: observer %s\n", path, printable.String(orNone(observerOf(m, doc))))
	if m.Effects != "" && m.Effects != bundle.EffectsObserved {
		fmt.Fprintf(stdout, "%s: %s\n", path, printable.String(m.Effects))
	}
	code := report.ExitPass
	if !authentic && !*integrityOnly {
		fmt.Fprintf(stdout, "%s: not authenticated: give the signer's public key with --key PUB (or --integrity-only to accept an unsigned bundle): exit 1\n", path)
		code = report.ExitFail
	}
	if m.Verdict != report.VerdictPass && !slices.Contains(accept, m.Verdict) {
		fmt.Fprintf(stdout, "%s: the verdict is %s, not PASS: exit 1 (--accept-verdict %s accepts it)\n", path, m.Verdict, m.Verdict)
		code = report.ExitFail
	}
	return code
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
