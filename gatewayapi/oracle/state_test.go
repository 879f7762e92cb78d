package oracle

import (
	"go/ast"
	"go/token"
	"sort"
	"testing"
)

// packageVars are the only package-level variables the rule table may
// have: the table itself and what is derived from it, written once from
// the texts and never changed. The harness and gwsim proxy both read it
// concurrently, so a variable that holds any state fails this test until
// it is listed here with the reason it holds none.
var packageVars = map[string]string{
	"APIKey": "the rule table", "Account": "the rule table", "DeviceID": "the rule table",
	"Envelope": "the rule table", "FormatField": "the rule table", "MAC": "the rule table",
	"MessageType": "the rule table", "MessageValue": "the rule table", "Name": "the rule table",
	"SN": "the rule table", "Sign": "the rule table", "TimestampF": "the rule table",
	"TypeField": "the rule table", "Types": "the rule table", "onOff": "table",
	"cyrillicOf": "table", "textWidths": "table", "w0": "table",
	"Statuses": "CONTRACT 4's status of each code", "inputCodes": "table", "laterCodes": "table",
	"AnswerRules":  "the names of the answer rules",
	"titleEscaper": "a strings.Replacer: fixed pairs, safe for concurrent use", "jsonEscaper": "a strings.Replacer: fixed pairs, safe for concurrent use",
}

func TestNoStateInPackageVariables(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	for _, f := range parseDir(t, fset, ".") {
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if n.Name != "_" {
						found = append(found, n.Name)
					}
				}
			}
		}
	}
	sort.Strings(found)
	seen := map[string]bool{}
	for _, v := range found {
		seen[v] = true
		if _, ok := packageVars[v]; !ok {
			t.Errorf("package variable %s: the rule table holds no state; if it holds none, list it in packageVars with why", v)
		}
	}
	for v := range packageVars {
		if !seen[v] {
			t.Errorf("packageVars lists %s, which is gone: take it out", v)
		}
	}
}
