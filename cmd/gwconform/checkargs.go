package main

// STAND-IN, to be replaced at the merge by helper "cli"'s checkArgs over
// its Main.ParseFlags: it repeats today's flag definitions of
// conformance.Run (and the Ginkgo flags, taken from flag.CommandLine).

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Ginkgo registers its ginkgo.* flags on flag.CommandLine when it is
// loaded (conformance imports it); they are accepted here as in Run.

// checkArgs parses a whole gwconform command line (subcommand and flags,
// without the program name) as gwconform would, without running anything.
func checkArgs(args []string) error {
	if len(args) == 0 {
		return errors.New("no command")
	}
	switch args[0] {
	case "checks", "-h", "--help", "help":
		return nil
	case "run":
	default:
		return fmt.Errorf("checkArgs stand-in covers run and checks, not %q", args[0])
	}
	fs := flag.NewFlagSet("gwconform run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("target", "", "")
	fs.String("fleet", "", "")
	fs.String("report-dir", "reports/latest", "")
	failOn := fs.String("fail-on", "must", "")
	fs.Float64("rate", 0, "")
	fs.Bool("dry-run", false, "")
	fs.Duration("timeout", 10*time.Second, "")
	fs.String("admin-token", "", "")
	fs.Int64("seed", 0, "")
	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "ginkgo.") {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *failOn != "must" && *failOn != "should" {
		return fmt.Errorf("--fail-on %q: must or should", *failOn)
	}
	return nil
}
