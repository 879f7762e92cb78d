package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/gwdmi/gwtools/conformance/bundle"
	"github.com/gwdmi/gwtools/conformance/report"
)

const verifyUsage = `Usage: gwconform verify FILE.tar.gz

Checks a bundle written by gwconform run --bundle: every file's SHA-256
against the manifest, every count and the verdict recomputed from the
results, every check of this gwconform's catalog present (a bundle of
another catalog names the catalog it needs), and, for a certified bundle,
that nothing was filtered, skipped or left uncovered, and that its baseline
(if any) has no TODO, expires within 90 days of the run and, in a certified
bundle, excuses no MUST check. The verified bundle's SHOULD failures and
the checks its baseline excused are listed, and its observer named.
One line per problem;
exit 0 only when all hold, 1 when any does not, 2 on bad usage.
`

// verifyMain is gwconform verify.
func verifyMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gwconform verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { io.WriteString(stderr, verifyUsage) }
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return report.ExitPass
		}
		return report.ExitConfig
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return report.ExitConfig
	}
	path := fs.Arg(0)
	problems := bundle.Verify(path, verifyExpect())
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(stdout, "%s: %s\n", path, p)
		}
		fmt.Fprintf(stdout, "%s: NOT VERIFIED (%d problem(s))\n", path, len(problems))
		return report.ExitFail
	}
	files, _ := bundle.Read(path)
	var m bundle.Manifest
	json.Unmarshal(files[bundle.ManifestFile], &m)
	var doc report.Document
	json.Unmarshal(files[report.JSONFile], &doc)
	var known, should []report.Result
	for _, r := range doc.Results {
		switch {
		case r.Outcome == report.ExpectedFailure:
			known = append(known, r)
		case r.Level == "SHOULD" && (r.Outcome == report.Failed || r.Outcome == report.Interrupted):
			should = append(should, r)
		}
	}
	fmt.Fprintf(stdout, "%s: verified: %s run of %s %s against %s, verdict %s, catalog %s, gwconform %s\n",
		path, m.Mode, orNone(m.Product.Name), orNone(m.Product.Version), m.Target, report.VerdictText(m.Verdict, len(known)), m.Catalog.Version, m.Harness.Version)
	// The failures a baseline excused are part of the verdict: each is named.
	if len(known) > 0 {
		fmt.Fprintf(stdout, "%s: %d known failure(s), excused by the run's baseline (%s):\n", path, len(known), bundle.BaselineFile)
		for _, r := range known {
			fmt.Fprintf(stdout, "  %-6s %s: %s\n", r.Level, r.ID, r.Reason)
		}
	}
	// A SHOULD failure does not change a PASS (unless the run failed on
	// them): each is named, so that a PASS is not read as "no failure".
	if len(should) > 0 {
		fmt.Fprintf(stdout, "%s: %d SHOULD failure(s) (CONTRACT; the run failed on them only with --fail-on should, this one: --fail-on %s):\n", path, len(should), orNone(m.FailOn))
		for i, r := range should {
			if i == report.MaxListed {
				fmt.Fprintf(stdout, "  ... and %d more (report.html in the bundle)\n", len(should)-i)
				break
			}
			fmt.Fprintf(stdout, "  %s: %s\n", r.ID, firstLine(r.Failure))
		}
	}
	fmt.Fprintf(stdout, "%s: observer %s\n", path, orNone(observerOf(m, doc)))
	if m.Effects != "" && m.Effects != bundle.EffectsObserved {
		fmt.Fprintf(stdout, "%s: %s\n", path, m.Effects)
	}
	return report.ExitPass
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
