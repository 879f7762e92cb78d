package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/gwdmi/gwtools/conformance/report"
)

const baselineUsage = `Usage: gwconform baseline REPORT.json|BUNDLE.tar.gz > baseline.yaml

Writes a starting baseline from a run's failures: one entry per failed MUST
or SHOULD check, expiring in 90 days, with TODO in place of the reason and
owner you must give. Run with it as gwconform run --baseline baseline.yaml:
a listed check that fails is shown as an expected failure and does not
change the exit code; an entry whose checks pass, an expired entry, or one
naming no check fails the run, so a baseline only ever shrinks.
`

// baselineMain is gwconform baseline.
func baselineMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gwconform baseline", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { io.WriteString(stderr, baselineUsage) }
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
	d, err := loadReport(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "gwconform baseline:", err)
		return report.ExitConfig
	}
	b, err := report.StartingBaseline(d, time.Now())
	if err != nil {
		fmt.Fprintln(stderr, "gwconform baseline:", err)
		return report.ExitFail
	}
	stdout.Write(b)
	return report.ExitPass
}
