package gwsimtest_test

import (
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// tableReceivers are the variables docs/app-testing.md's table calls
// methods on, and the type each stands for.
var tableReceivers = map[string]string{
	"sim": "Server", "client": "Client", "answer": "Answer", "cred": "Credentials", "sc": "Scenario", "app": "ClientReport",
}

// appTestingTable is the code spans of docs/app-testing.md's table of the
// package's API.
func appTestingTable(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "app-testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "| | calls, each with what it returns |\n")
	if !ok {
		t.Fatal(`docs/app-testing.md has no table "calls, each with what it returns"`)
	}
	var rows []string
	for _, l := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(l, "|") {
			break
		}
		rows = append(rows, l)
	}
	var spans []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(strings.Join(rows, "\n"), -1) {
		spans = append(spans, m[1])
	}
	return spans
}

// splitCall reads `recv.Name(args) results` (recv and results may be
// missing); ok is false when span is no call.
func splitCall(span string) (recv, name string, args []string, results string, ok bool) {
	m := regexp.MustCompile(`^(?:([a-z]\w*)\.)?([A-Z]\w*)\(`).FindStringSubmatch(span)
	if m == nil {
		return "", "", nil, "", false
	}
	recv, name = m[1], m[2]
	depth, quoted, start := 0, false, len(m[0])
	for i := len(m[0]) - 1; i < len(span); i++ {
		switch c := span[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
			if depth == 0 {
				if a := strings.TrimSpace(span[start:i]); a != "" {
					args = append(args, a)
				}
				return recv, name, args, strings.TrimSpace(span[i+1:]), true
			}
		case c == ',' && depth == 1:
			args = append(args, strings.TrimSpace(span[start:i]))
			start = i + 1
		}
	}
	return "", "", nil, "", false
}

// TestAppTestingTableIsTheAPI: docs/app-testing.md's table is the
// package's API as the code has it. Each call of the table names a
// function (bare or gwsimtest.Name) or a method of a receiver of
// tableReceivers, with as many arguments as it takes and exactly its
// results (none written when it has none); each `Name{…}` lists the
// exported fields of that struct, in order; each `recv.Field type` is a
// field of that type. Every exported function, method, field, type and
// constant of the package is in the table.
func TestAppTestingTableIsTheAPI(t *testing.T) {
	t.Parallel()
	s := loadSurface(t)
	scope := s.pkg.Scope()
	qualifier := func(p *types.Package) string {
		if p == s.pkg {
			return ""
		}
		return p.Name()
	}
	named := func(name string) *types.Named {
		if tn, ok := scope.Lookup(name).(*types.TypeName); ok {
			n, _ := tn.Type().(*types.Named)
			return n
		}
		return nil
	}
	tuple := func(tu *types.Tuple) string {
		var out []string
		for i := range tu.Len() {
			out = append(out, types.TypeString(tu.At(i).Type(), qualifier))
		}
		if len(out) > 1 {
			return "(" + strings.Join(out, ", ") + ")"
		}
		return strings.Join(out, "")
	}
	// called are the functions and methods the table calls ("Start",
	// "Server.Close"), fields the fields it gives ("Faults.Latency"), and
	// mentioned every identifier its spans name (types, constants).
	called, fields, mentioned := map[string]bool{}, map[string]bool{}, map[string]bool{}
	braces := regexp.MustCompile(`^([A-Z]\w*)\{(\w+(?:, \w+)*)\}$`)
	field := regexp.MustCompile(`^([a-z]\w*)\.([A-Z]\w*) (\S.*)$`)
	for _, span := range appTestingTable(t) {
		for _, id := range regexp.MustCompile(`\b[A-Z]\w*\b`).FindAllString(span, -1) {
			mentioned[id] = true
		}
		if recv, name, args, results, ok := splitCall(span); ok {
			var fn *types.Func
			what := name
			if recv == "" || recv == "gwsimtest" {
				fn, _ = scope.Lookup(name).(*types.Func)
			} else if typ, ok := tableReceivers[recv]; !ok {
				t.Errorf("%s: the table calls a method on %s, which is none of %v", span, recv, tableReceivers)
				continue
			} else if n := named(typ); n != nil {
				what = typ + "." + name
				obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(n), true, s.pkg, name)
				fn, _ = obj.(*types.Func)
			}
			if fn == nil {
				t.Errorf("%s: the package has no %s", span, what)
				continue
			}
			called[what] = true
			sig := fn.Type().(*types.Signature)
			n := sig.Params().Len()
			if len(args) != n && !(sig.Variadic() && len(args) >= n-1) {
				t.Errorf("%s: the table gives %s %d arguments, the package %d: %s", span, what, len(args), n, types.TypeString(sig, qualifier))
			}
			if want := tuple(sig.Results()); results != want {
				t.Errorf("%s: the table gives %s as returning %q, the package %q", span, what, results, want)
			}
			continue
		}
		if m := braces.FindStringSubmatch(span); m != nil {
			var st *types.Struct
			if n := named(m[1]); n != nil {
				st, _ = n.Underlying().(*types.Struct)
			}
			if st == nil {
				t.Errorf("%s: the package has no struct %s", span, m[1])
				continue
			}
			var exported []string
			for i := range st.NumFields() {
				if f := st.Field(i); f.Exported() {
					exported = append(exported, f.Name())
					fields[m[1]+"."+f.Name()] = true
				}
			}
			if listed := strings.Split(m[2], ", "); !slices.Equal(listed, exported) {
				t.Errorf("%s: the table lists %s's fields as %q, the package has %q", span, m[1], listed, exported)
			}
			continue
		}
		if m := field.FindStringSubmatch(span); m != nil {
			typ, ok := tableReceivers[m[1]]
			if !ok {
				continue // prose, not a field of the package
			}
			obj, _, _ := types.LookupFieldOrMethod(named(typ), true, s.pkg, m[2])
			f, ok := obj.(*types.Var)
			if !ok {
				t.Errorf("%s: %s has no field %s", span, typ, m[2])
				continue
			}
			fields[typ+"."+m[2]] = true
			if got := types.TypeString(f.Type(), qualifier); got != m[3] {
				t.Errorf("%s: the table gives %s.%s as %q, the package %q", span, typ, m[2], m[3], got)
			}
		}
	}
	var missing []string
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		tn, isType := obj.(*types.TypeName)
		switch obj.(type) {
		case *types.Func:
			if !called[name] {
				missing = append(missing, name+" (as a call)")
			}
		default:
			if !mentioned[name] {
				missing = append(missing, name)
			}
		}
		if !isType {
			continue
		}
		n := tn.Type().(*types.Named)
		if st, ok := n.Underlying().(*types.Struct); ok {
			for i := range st.NumFields() {
				if f := st.Field(i); f.Exported() && !fields[name+"."+f.Name()] {
					missing = append(missing, name+"."+f.Name())
				}
			}
		}
		for i := range n.NumMethods() {
			if m := n.Method(i); m.Exported() && !called[name+"."+m.Name()] {
				missing = append(missing, name+"."+m.Name()+" (as a call)")
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("docs/app-testing.md's table does not give %s", strings.Join(missing, ", "))
	}
}
