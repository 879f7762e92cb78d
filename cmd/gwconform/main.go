// Command gwconform certifies an implementation of the Gateway Device
// Management Interface.
//
//	gwconform run [--target URL] [--fleet FILE] [--report-dir DIR] [--fail-on must|should] ...
//	gwconform checks            print the catalog of checks (docs/checks.md)
//	gwconform load [--target URL] [--fleet FILE] --rate R --duration D --concurrency C
//	gwconform load merge FILE|DIR...   combine the shards' results (--shard I/N)
//	gwconform load check-acks ACKLOG --target URL
//
// "gwconform run -h" lists every flag of run.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/stopsignal"
)

const usage = `gwconform certifies an implementation of the Gateway Device Management Interface.

Usage:
  gwconform run [--target URL] [--fleet FILE] [--report-dir DIR] [--fail-on must|should]
                [--parallel N] [--check ID]... [--baseline FILE] [--bundle FILE --mode certified] ...
                        run the conformance checks and write the reports
  gwconform checks      print the catalog of checks as Markdown
  gwconform replay REPORT.json CHECK-ID [--target URL] [--fleet FILE] [--observer URL]
                        run one check again as the run ran it: REPRODUCED, CHANGED or NOT JUDGED
  gwconform replay explore.json [--target URL] [--fleet FILE] [--observer URL]
                        run the shrunk sequence of gwconform explore again
  gwconform explore [--target URL] [--fleet FILE] [--duration D | --operations N] [--seed S] [--clients N]
                        random sequences checked against a model, shrunk to a minimal reproduction
  gwconform diff --target A --target B [--fleet FILE] [--read-only] [--calibrate] ...
                        the same operations against two implementations: every difference, shrunk
  gwconform baseline REPORT.json
                        write a starting baseline (known failures with an end date) from a run's failures
  gwconform verify FILE.tar.gz --key PUB
                        check a bundle written by run --bundle: signature, hashes, counts, verdict, catalog
  gwconform keygen --out NAME
                        write a key pair to sign bundles with (run --sign-key NAME, verify --key NAME.pub)
  gwconform sign        renew the timestamp and sign of a request body (stdin to stdout)
  gwconform load [--target URL] [--fleet FILE] --rate R --duration D --concurrency C ...
                        send valid, signed requests as load and measure the answers
                        (--shard I/N: one of N machines sharing the load; --report-dir: report.html)
  gwconform load merge FILE|DIR...
                        combine the shards' results into one, percentiles of all requests
  gwconform load check-acks ACKLOG --target URL
                        check that every change an ack log says was acknowledged is there

Run "gwconform run -h" or "gwconform load -h" for every flag.
`

func main() {
	ctx, stop := stopsignal.Context(context.Background(), interruptGrace)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(report.ExitConfig)
	}
	if versionAsked(os.Args[1:]) {
		printVersion(os.Stdout)
		return
	}
	switch os.Args[1] {
	case "run":
		os.Exit(runCmd(ctx, os.Args[2:], os.Stdout, os.Stderr))
	case "load":
		os.Exit(loadCmd(ctx, os.Args[2:], os.Stdout, os.Stderr))
	case "explore":
		os.Exit(exploreCmd(ctx, os.Args[2:], os.Stdout, os.Stderr))
	case "diff":
		os.Exit(diffCmd(ctx, os.Args[2:], os.Stdout, os.Stderr))
	case "replay":
		os.Exit(replayCmd(ctx, os.Args[2:], os.Stdout, os.Stderr))
	case "baseline":
		os.Exit(baselineMain(os.Args[2:], os.Stdout, os.Stderr))
	case "verify":
		os.Exit(verifyMain(os.Args[2:], os.Stdout, os.Stderr))
	case "keygen":
		os.Exit(keygenMain(os.Args[2:], os.Stdout, os.Stderr))
	case "sign":
		os.Exit(signMain(ctx, os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	case "checks":
		os.Exit(checksMain(os.Args[2:], os.Stdout, os.Stderr))
	case "--version", "-version", "version":
		printVersion(os.Stdout)
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintln(os.Stderr, unknownCommand(os.Args[1]))
		os.Exit(report.ExitConfig)
	}
}

// interruptGrace is how long gwconform may take to stop after the first
// SIGINT or SIGTERM: an interrupted run puts the devices back and writes
// its reports, which against a slow target takes longer than gwsim's
// stopsignal.Grace.
const interruptGrace = 30 * time.Second

// commands are gwconform's subcommands.
var commands = []string{"run", "checks", "replay", "baseline", "verify", "keygen", "sign", "load", "explore", "diff", "version", "help"}

// unknownCommand is the one line for a mistyped subcommand (or a flag
// given before one).
func unknownCommand(arg string) string {
	if strings.HasPrefix(arg, "-") {
		return fmt.Sprintf("gwconform: %s needs a command first, such as gwconform run %s; \"gwconform -h\" lists the commands", arg, arg)
	}
	s := fmt.Sprintf("gwconform: unknown command %q", arg)
	if near := nearestWord(strings.ToLower(arg), commands); near != "" {
		s += fmt.Sprintf(" (did you mean %s?)", near)
	}
	return s + "; \"gwconform -h\" lists the commands"
}
