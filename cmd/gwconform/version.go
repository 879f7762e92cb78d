package main

import (
	"fmt"
	"io"

	"github.com/gwdmi/gwtools/conformance"
	"github.com/gwdmi/gwtools/gatewayapi/version"
)

// subcommands are gwconform's commands that take --version after them.
var subcommands = map[string]bool{"run": true, "load": true, "replay": true, "baseline": true,
	"verify": true, "sign": true, "checks": true, "version": true}

// versionAsked reports `gwconform COMMAND ... --version` (or -version),
// before a "--" that ends the flags: every subcommand answers it.
func versionAsked(args []string) bool {
	if len(args) == 0 || !subcommands[args[0]] {
		return false
	}
	for _, a := range args[1:] {
		if a == "--" {
			return false
		}
		if a == "--version" || a == "-version" {
			return true
		}
	}
	return false
}

// printVersion is the one line of gwconform --version.
func printVersion(w io.Writer) {
	fmt.Fprintln(w, "gwconform", version.Get(), "catalog", conformance.CatalogVersion)
}
