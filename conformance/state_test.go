package conformance

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// packageVars are the only package-level variables the harness's packages
// may have: values fixed at start (patterns, tables, templates, errors) and
// caches of what the code and its embedded files define, the same for
// every run. A run's state (its target, its devices, its progress, its
// outcome) lives in the values a run makes (Env, Config, execution), so
// that nothing of one run leaks into another; a new package variable
// fails this test until it is listed here with the reason it holds no
// run's state.
var packageVars = map[string]string{
	"catalogversion.go catalogHashes":     "table: the pinned hash of each catalog version",
	"checks/checks.go families":           "table of the package's families of checks, filled as the program starts",
	"catalog/samplecases.go sampleTag":    "table",
	"report/mask.go ourOwn":               "table: the report fields the harness writes from its own catalog, never masked",
	"catalog/said.go codeSaid":            "table: the CONTRACT's sentence of each code",
	"checksdoc/checksdoc.go saidRE":       "pattern",
	"checksdoc/checksdoc.go quoteRE":      "pattern",
	"internal/trial/trial.go errEnded":    "the panic value that stops a recorded body",
	"link/link.go errEnding":              "error",
	"report/findings.go signPosition":     "pattern",
	"internal/trial/trial.go failHandler": "the process's fail handler, as Gomega keeps its own: the same for every run of the process",
	"internal/trial/trial.go failMu":      "guards failHandler",
	"internal/trial/trial.go helpers":     "the call sites of Helper marked, as Ginkgo keeps the helpers themselves: what the code is, the same for every run",
	"internal/trial/trial.go spec":        "the live trial of whichever spec Ginkgo runs: it holds no state of its own",
	"explore/op.go success":               "table: the answer of a success",
	"explore/op.go contractCodes":         "table: the error codes CONTRACT names, fixed at start",
	"explore/space.go deviceOrigins":      "table: the origins of a device request's identifiers",
	"explore/space.go messageOrigins":     "table: the origins of a message's identifiers",
	"explore/wire.go wireTable":           "table: the wire forms diff draws, fixed at start",
	"explore/wire.go wireSlugs":           "table: the wire forms' names in a fixed order",
	"explore/wire.go samples":             "cache of a pure function: the oracle's sample of a form made from a value, the same for every run",
	"explore/output.go htmlPage":          "template",
	"diff/output.go htmlPage":             "template",
	"report/html.go textEscaper":          "fixed replacer",
	"load/checkacks.go ErrAdmin":          "error",
	"checks/httprules.go rfcSources":      "table",
	"internal/wire/wire.go ErrClosed":     "error",
	"internal/wire/wire.go ErrTimeout":    "error",
	"load/load.go ErrShardDevices":        "error",
	"load/report.go distPercentiles":      "table",
	"load/report.go reportPage":           "the embedded report page",
	"bundle/bundle.go apiKeyAnywhere":     "pattern",
	"bundle/bundle.go secretAnywhere":     "pattern",
	"bundle/bundle.go signAnywhere":       "pattern",
	"catalogid.go catalogOnce":            "the catalog, built once: the same for every run",
	"catalogid.go catalogVal":             "the catalog, built once: the same for every run",
	"check/check.go Levels":               "table",
	"check/sections.go Sections":          "table",
	"catalog/draw.go notSettingChar":      "pattern",
	"observer/observer.go observerHTTP":   "an HTTP client without run state (its idle connections only)",
	"engine/failure.go typed":             "pattern",
	"engine/failure.go matcher":           "pattern",
	"engine/failure.go unary":             "pattern",
	"load/load.go ErrOwnedDevices":        "error value",
	"load/plan.go DefaultMix":             "default value",
	"load/raw.go errNoAnswer":             "error value",
	"load/send.go successJSON":            "fixed body",
	"load/send.go successXML":             "fixed body",
	"report/html.go levelMeaning":         "table",
	"report/html.go funcs":                "template functions",
	"report/html.go pageBase":             "parsed template, cloned per report",
	"report/report.go Formats":            "table",
	"report/write.go Writers":             "table of report files",
	"catalog/call.go JSONNames":           "table",
	"rules/rules.go source":               "embedded file",
	"rules/rules.go once":                 "the rules, parsed once from the embedded file",
	"rules/rules.go all":                  "the rules, parsed once from the embedded file",
	"rules/rules.go err":                  "the rules, parsed once from the embedded file",
	"rules/rules.go forCache":             "cache of each case's rules",
	"rules/rules.go deviationSource":      "embedded file",
}

func TestNoRunStateInPackageVariables(t *testing.T) {
	var found []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if n.Name != "_" {
						found = append(found, filepath.ToSlash(p)+" "+n.Name)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(found)
	seen := map[string]bool{}
	for _, v := range found {
		seen[v] = true
		if _, ok := packageVars[v]; !ok {
			t.Errorf("package variable %s: a run's state belongs in the values a run makes (Env, Config); if it holds none, list it in packageVars with why", v)
		}
	}
	for v := range packageVars {
		if !seen[v] {
			t.Errorf("packageVars lists %s, which is gone: take it out", v)
		}
	}
	if len(found) < 10 {
		t.Fatalf("found only %d package variables: is the walk looking at the harness's packages?", len(found))
	}
}
