package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/gwdmi/gwtools/conformance"
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

// checksMatch says which --check pattern matches no check of the catalog,
// with the nearest ID: a run that ran nothing because of a typing mistake
// would otherwise read as a PARTIAL run.
func checksMatch(globs []string) error {
	metas := conformance.Checks()
	for _, g := range globs {
		re, err := regexp.Compile(focusOnGlobs([]string{g}))
		if err != nil {
			return fmt.Errorf("--check %q: %v", g, err)
		}
		ids := make([]string, 0, len(metas))
		found := false
		for _, m := range metas {
			ids = append(ids, m.ID)
			if re.MatchString("[" + m.ID + "]") {
				found = true
				break
			}
		}
		if found {
			continue
		}
		msg := fmt.Sprintf("--check %q matches no check", g)
		if !strings.ContainsAny(g, "*?") {
			if near := nearestWord(g, ids); near != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", near)
			}
		}
		return errors.New(msg + "; \"gwconform checks --format json\" lists every check's ID")
	}
	return nil
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
