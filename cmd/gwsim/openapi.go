package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/gwdmi/gwtools/simulator/openapi"
	"github.com/gwdmi/gwtools/simulator/server"
)

// openAPICmd is `gwsim openapi`: the document that `make openapi` writes to
// docs/openapi.yaml and GET /_sim/openapi.yaml serves.
func openAPICmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(stdout, "Usage: gwsim openapi [--version]\n\nPrints the OpenAPI 3.1 document of the interface (docs/openapi.yaml) on standard output.")
		return 0
	}
	if len(args) > 0 {
		if strings.HasPrefix(args[0], "-") {
			fmt.Fprintf(stderr, "gwsim openapi: unknown flag %s: it takes none; it prints the document on standard output (gwsim openapi > openapi.yaml)\n", args[0])
		} else {
			fmt.Fprintf(stderr, "gwsim openapi: unexpected argument %q (gwsim openapi > openapi.yaml)\n", args[0])
		}
		return 2
	}
	doc, err := openapi.Generate(server.Codes())
	if err != nil {
		fmt.Fprintln(stderr, "gwsim openapi:", err)
		return 1
	}
	if _, err := stdout.Write(doc); err != nil {
		fmt.Fprintln(stderr, "gwsim openapi:", err)
		return 1
	}
	return 0
}
