package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/gwdmi/gwtools/conformance/report"
)

// subcommand is a gwconform command that holds something between its
// steps (an embedded simulator, a target's connections, an ack log):
// ParseFlags reads and checks the command line, Open prepares the run,
// Run does it and says the exit code, Close releases what the others
// took.
type subcommand interface {
	ParseFlags(args []string) error
	Open(ctx context.Context) error
	Run(ctx context.Context) int
	Close() error
}

// lifecycle takes c through its steps and gives the exit code (CONTRACT
// 6, report.Exit*): 0 after -h; 2 on a flag or Open error, with one line
// "prog: reason" on stderr unless the error is errUsage; otherwise Run's
// code. Close runs once whatever happened; its error gets its line too,
// and turns an exit 0 into 2: something the command opened did not close.
func lifecycle(ctx context.Context, prog string, c subcommand, args []string, stderr io.Writer) (code int) {
	defer func() {
		if err := c.Close(); err != nil {
			fmt.Fprintf(stderr, "%s: %s\n", prog, shown(err))
			if code == report.ExitPass {
				code = report.ExitConfig
			}
		}
	}()
	failed := func(err error) int {
		if !errors.Is(err, errUsage) {
			fmt.Fprintf(stderr, "%s: %s\n", prog, shown(err))
		}
		return report.ExitConfig
	}
	if err := c.ParseFlags(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return report.ExitPass
		}
		return failed(err)
	}
	if err := c.Open(ctx); err != nil {
		return failed(err)
	}
	return c.Run(ctx)
}

// errUsage is an error already printed: a flag error with its line
// (parseFlags), or reasons a command printed itself. lifecycle adds
// nothing for it.
var errUsage = errors.New("usage")
