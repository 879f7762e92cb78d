package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/printable"
)

// focusOnGlobs is a Ginkgo focus (or skip) expression selecting the
// checks whose ID matches one of the globs (* any run of characters, ?
// one).
func focusOnGlobs(globs []string) string {
	parts := make([]string, len(globs))
	for i, g := range globs {
		q := regexp.QuoteMeta(g)
		q = strings.ReplaceAll(q, `\*`, `[^\]]*`)
		parts[i] = strings.ReplaceAll(q, `\?`, `[^\]]`)
	}
	return `\[(` + strings.Join(parts, "|") + `)\]`
}

// colorful says whether colour suits w: a terminal, with neither NO_COLOR
// nor TERM=dumb in the environment (clig.dev).
func colorful(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// shown is v as the console shows it: an error or line that may hold a
// target's text, with control characters escaped (printable.String), as
// the failure blocks are.
func shown(v any) string { return printable.String(fmt.Sprint(v)) }
