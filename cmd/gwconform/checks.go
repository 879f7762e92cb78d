package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/gwdmi/gwtools/conformance"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/checksdoc"
	"github.com/gwdmi/gwtools/conformance/report"
)

const checksUsage = `Usage: gwconform checks [--format md|json] [--level MUST|SHOULD|INFO]

Prints the catalog of checks: every check's ID, level, published section,
title and assertion. Markdown by default (docs/checks.md is this output);
--format json for scripts; --level keeps one level.

Flags:
`

// checksMain is gwconform checks.
func checksMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gwconform checks", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "md", "md or json")
	level := fs.String("level", "", "only checks of this level: MUST, SHOULD or INFO")
	fs.Usage = func() { io.WriteString(stderr, checksUsage); fs.PrintDefaults() }
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return report.ExitPass
		}
		return report.ExitConfig
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gwconform checks: unexpected argument %q\n", fs.Arg(0))
		return report.ExitConfig
	}
	lvl := check.Level(strings.ToUpper(*level))
	if *level != "" && lvl != check.Must && lvl != check.Should && lvl != check.Info {
		fmt.Fprintf(stderr, "gwconform checks: --level must be MUST, SHOULD or INFO, not %q\n", *level)
		return report.ExitConfig
	}
	switch *format {
	case "md":
		if *level == "" {
			io.WriteString(stdout, checksdoc.Markdown())
			return report.ExitPass
		}
		fmt.Fprintf(stdout, "# %s checks\n\n| ID | section | title |\n|---|---|---|\n", lvl)
		for _, m := range conformance.Checks() {
			if m.Level == lvl {
				fmt.Fprintf(stdout, "| `%s` | %s | %s |\n", m.ID, m.Section, strings.ReplaceAll(m.Title, "|", `\|`))
			}
		}
	case "json":
		var out []check.Meta
		for _, m := range conformance.Checks() {
			if *level == "" || m.Level == lvl {
				out = append(out, m)
			}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(map[string]any{"catalog_version": conformance.CatalogVersion, "catalog_hash": conformance.CatalogHash(), "checks": out})
	default:
		fmt.Fprintf(stderr, "gwconform checks: --format must be md or json, not %q\n", *format)
		return report.ExitConfig
	}
	return report.ExitPass
}
