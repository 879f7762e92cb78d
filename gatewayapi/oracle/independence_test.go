package oracle

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const devicePath = "github.com/gwdmi/gwtools/gatewayapi/device"

// forbidden is what the harness may not use of the simulator's domain
// package: its parsing and validation, and its table's ranges and rules
// . Plain names (operations, formats, field names, error
// codes, the list of type names) stay allowed.
var forbidden = []string{
	// parsing and validation
	"device.Parse",
	"device.CheckName",
	"device.Field.Parse",
	"device.Type.ParseState",
	"device.Type.Apply",
	"device.Type.DefaultState",
	"device.Type.Get",
	"device.Type.StateMap",
	// the table's ranges, values and rules
	"device.Field.Min",
	"device.Field.Max",
	"device.Field.MaxLen",
	"device.Field.Values",
	"device.Field.Rule",
	"device.Field.Example",
	"device.Field.Kind",
	"device.Type.Fields",
	"device.HexLen",
	"device.MaxNameLen",
	"device.MaxAPIKeyLen",
	"device.MaxMessageTypeLen",
	"device.MaxMessageValueLen",
}

// fakeImporter type-checks package device from its source and gives every
// other import as an empty package: the harness's uses of device resolve,
// the rest is left unresolved (its errors are ignored).
type fakeImporter struct {
	fset   *token.FileSet
	device *types.Package
}

func (im *fakeImporter) Import(path string) (*types.Package, error) {
	if path == devicePath {
		return im.device, nil
	}
	name := path[strings.LastIndex(path, "/")+1:]
	if strings.HasPrefix(name, "v") && strings.Count(path, "/") > 1 && len(name) <= 3 { // ginkgo/v2
		p := strings.TrimSuffix(path, "/"+name)
		name = p[strings.LastIndex(p, "/")+1:]
	}
	pkg := types.NewPackage(path, name)
	pkg.MarkComplete()
	return pkg, nil
}

func parseDir(t *testing.T, fset *token.FileSet, dir string) []*ast.File {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// TestHarnessDoesNotUseTheSimulatorsValidation fails when a non-test file
// of the harness (conformance/...) or of this package uses anything of
// forbidden: the harness's expectations (and gwsim proxy's verdicts) must
// come from this package, never from the simulator's validator or device
// table.
func TestHarnessDoesNotUseTheSimulatorsValidation(t *testing.T) {
	fset := token.NewFileSet()
	devFiles := parseDir(t, fset, "../device")
	conf := types.Config{Importer: importer.Default(), Error: func(error) {}}
	dev, _ := conf.Check(devicePath, fset, devFiles, nil)
	// Every field of device's struct types, by its object.
	fieldNames := map[*types.Var]string{}
	for _, n := range dev.Scope().Names() {
		tn, ok := dev.Scope().Lookup(n).(*types.TypeName)
		if !ok {
			continue
		}
		if st, ok := tn.Type().Underlying().(*types.Struct); ok {
			for i := 0; i < st.NumFields(); i++ {
				fieldNames[st.Field(i)] = "device." + n + "." + st.Field(i).Name()
			}
		}
	}
	name := func(obj types.Object) string {
		switch o := obj.(type) {
		case *types.Func:
			if recv := o.Type().(*types.Signature).Recv(); recv != nil {
				rt := recv.Type()
				if p, ok := rt.(*types.Pointer); ok {
					rt = p.Elem()
				}
				if nt, ok := rt.(*types.Named); ok {
					return "device." + nt.Obj().Name() + "." + o.Name()
				}
			}
		case *types.Var:
			if o.IsField() {
				return fieldNames[o]
			}
		}
		return "device." + obj.Name()
	}
	bad := map[string]bool{}
	for _, f := range forbidden {
		bad[f] = true
	}
	// The harness (conformance/...) and this rule table itself: the proxy
	// of gwsim judges with this package too, so it must stay independent
	// of the validator it is meant to check.
	dirs := []string{"."}
	filepath.WalkDir("../../conformance", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() != "testdata" {
			dirs = append(dirs, p)
		}
		return err
	})
	var found []string
	scanned, seenSelf := 0, false
	for _, dir := range dirs {
		files := parseDir(t, fset, dir)
		if len(files) == 0 {
			continue
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
		conf := types.Config{Importer: &fakeImporter{fset: fset, device: dev}, Error: func(error) {}}
		conf.Check(dir, fset, files, info)
		scanned++
		seenSelf = seenSelf || dir == "."
		for id, obj := range info.Uses {
			if obj == nil || obj.Pkg() == nil || obj.Pkg().Path() != devicePath {
				continue
			}
			if n := name(obj); bad[n] {
				found = append(found, fset.Position(id.Pos()).String()+": "+n)
			}
		}
	}
	if scanned < 3 || !seenSelf {
		t.Fatalf("scanned only %d packages (this one: %v)", scanned, seenSelf)
	}
	sort.Strings(found)
	for _, f := range found {
		t.Errorf("the harness uses the simulator's validation or table: %s", f)
	}
}

// TestIndependenceScanFindsUses: the scan sees a use when there is one (a
// scan that sees nothing passes whatever the harness does).
func TestIndependenceScanFindsUses(t *testing.T) {
	fset := token.NewFileSet()
	dev, _ := (&types.Config{Importer: importer.Default(), Error: func(error) {}}).Check(devicePath, fset, parseDir(t, fset, "../device"), nil)
	src := `package x
import "github.com/gwdmi/gwtools/gatewayapi/device"
func f() bool { t := device.Types[0]; _, err := t.Fields[0].Parse(0, device.Str("x")); return err == nil && t.Fields[0].Max > 1 }`
	file, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	(&types.Config{Importer: &fakeImporter{device: dev}, Error: func(error) {}}).Check("x", fset, []*ast.File{file}, info)
	seen := map[string]bool{}
	for id, obj := range info.Uses {
		if obj != nil && obj.Pkg() == dev {
			seen[id.Name] = true
		}
	}
	if !seen["Parse"] || !seen["Max"] {
		t.Fatalf("the scan does not resolve t.Fields[0].Parse and .Max: %v", seen)
	}
}

// TestOracleImportsOnlyPlainNames: besides the standard library, the rule
// table imports only gatewayapi/device (for its plain names, held to the
// forbidden list above); never gwsim's codec, auth or anything of either
// program, so that what it calls valid is its own reading of the texts.
func TestOracleImportsOnlyPlainNames(t *testing.T) {
	fset := token.NewFileSet()
	files := parseDir(t, fset, ".")
	if len(files) < 3 {
		t.Fatalf("only %d files", len(files))
	}
	for _, f := range files {
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if p != devicePath && strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
				t.Errorf("%s imports %s", fset.Position(imp.Pos()).Filename, p)
			}
		}
	}
}
