package gwsimtest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// surface is the package type-checked from its own files (its tests
// aside), for the tests that hold its exported surface to its promise.
type surface struct {
	pkg   *types.Package
	fset  *token.FileSet
	files []*ast.File
	// std says whether an import path is of the standard library.
	std func(path string) bool
	// check type-checks more source against the same imports (those of
	// the package and its tests), filling info when it is not nil.
	check func(path string, files []*ast.File, info *types.Info) (*types.Package, error)
}

var (
	surfaceOnce sync.Once
	surfaceVal  *surface
	surfaceErr  error
)

// loadSurface type-checks the package once for every test. Its imports,
// and its tests', come from the export data go list -export gives
// (compiled into the build cache, nothing fetched): reading every
// dependency from source instead takes about 15 s, 35 s under -race.
func loadSurface(t *testing.T) *surface {
	t.Helper()
	surfaceOnce.Do(func() { surfaceVal, surfaceErr = newSurface() })
	if surfaceErr != nil {
		t.Fatal(surfaceErr)
	}
	return surfaceVal
}

func newSurface() (*surface, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(goTool, "list", "-export", "-deps", "-test", "-json=ImportPath,Dir,GoFiles,Export,Standard,DepOnly", ".")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %w", err)
	}
	type listed struct {
		ImportPath, Dir, Export string
		GoFiles                 []string
		Standard, DepOnly       bool
	}
	exports, std := map[string]string{}, map[string]bool{}
	var self *listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list -export: %w", err)
		}
		if strings.Contains(p.ImportPath, " ") || strings.HasSuffix(p.ImportPath, ".test") {
			continue // a package built for the test binary only
		}
		exports[p.ImportPath], std[p.ImportPath] = p.Export, p.Standard
		if !p.DepOnly && !strings.HasSuffix(p.ImportPath, "_test") {
			self = &p
		}
	}
	if self == nil {
		return nil, errors.New("go list -export did not list the package itself")
	}
	s := &surface{fset: token.NewFileSet()}
	s.std = func(path string) bool {
		if known, ok := std[path]; ok {
			return known
		}
		// A package the surface does not import (in a test's own
		// source): the standard library's paths have no dot in their
		// first element.
		first, _, _ := strings.Cut(path, "/")
		return !strings.Contains(first, ".")
	}
	imp := importer.ForCompiler(s.fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, fmt.Errorf("%s is not among the package's dependencies", path)
		}
		return os.Open(exports[path])
	})
	// The importer keeps the packages it has read in a map of its own:
	// the tests that run in parallel type-check one at a time.
	var mu sync.Mutex
	s.check = func(path string, files []*ast.File, info *types.Info) (*types.Package, error) {
		mu.Lock()
		defer mu.Unlock()
		conf := types.Config{Importer: imp}
		return conf.Check(path, s.fset, files, info)
	}
	for _, name := range self.GoFiles {
		f, err := parser.ParseFile(s.fset, filepath.Join(self.Dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		s.files = append(s.files, f)
	}
	if s.pkg, err = s.check(self.ImportPath, s.files, nil); err != nil {
		return nil, err
	}
	return s, nil
}

// leaks walks every exported name of pkg: the types of its constants and
// variables, its functions' signatures, and for each of its named types
// (and those their exported parts reach) the exported and embedded
// fields and the exported methods. Each type met must be of the standard
// library or of pkg itself; leaks says, for each other, which name leaks
// which type. walked counts the names and parts looked at.
func leaks(pkg *types.Package, std func(string) bool) (found []string, walked int) {
	seen := map[*types.TypeName]bool{}
	var visit func(where string, t types.Type)
	walkNamed := func(where string, n *types.Named) {
		obj := n.Obj()
		if seen[obj] {
			return
		}
		seen[obj] = true
		name := obj.Name()
		if !obj.Exported() {
			name = where + " (through unexported " + name + ")"
		}
		switch u := n.Underlying().(type) {
		case *types.Struct:
			for i := range u.NumFields() {
				if f := u.Field(i); f.Exported() || f.Embedded() {
					walked++
					visit(name+"."+f.Name(), f.Type())
				}
			}
		default:
			visit(name, u)
		}
		if _, isInterface := n.Underlying().(*types.Interface); isInterface {
			return // its methods are its underlying type's, walked above
		}
		ms := types.NewMethodSet(types.NewPointer(n))
		for i := range ms.Len() {
			if m := ms.At(i).Obj(); m.Exported() {
				walked++
				visit(name+"."+m.Name(), m.Type())
			}
		}
	}
	visit = func(where string, t types.Type) {
		switch t := t.(type) {
		case *types.Alias:
			visit(where, types.Unalias(t))
		case *types.Named:
			if args := t.TypeArgs(); args != nil {
				for i := range args.Len() {
					visit(where, args.At(i))
				}
			}
			switch p := t.Obj().Pkg(); {
			case p == nil: // error, comparable
			case p == pkg:
				walkNamed(where, t.Origin())
			case !std(p.Path()):
				found = append(found, fmt.Sprintf("%s names %s, of %s: neither the standard library nor %s",
					where, types.TypeString(t, (*types.Package).Name), p.Path(), pkg.Name()))
			}
		case *types.Pointer:
			visit(where, t.Elem())
		case *types.Slice:
			visit(where, t.Elem())
		case *types.Array:
			visit(where, t.Elem())
		case *types.Chan:
			visit(where, t.Elem())
		case *types.Map:
			visit(where, t.Key())
			visit(where, t.Elem())
		case *types.Signature:
			for i := range t.Params().Len() {
				p := t.Params().At(i)
				name := p.Name()
				if name == "" || name == "_" {
					name = fmt.Sprint(i + 1)
				}
				visit(fmt.Sprintf("%s (parameter %s)", where, name), p.Type())
			}
			for i := range t.Results().Len() {
				visit(where+" (result)", t.Results().At(i).Type())
			}
		case *types.Struct:
			for i := range t.NumFields() {
				if f := t.Field(i); f.Exported() || f.Embedded() {
					visit(where+"."+f.Name(), f.Type())
				}
			}
		case *types.Interface:
			for i := range t.NumMethods() {
				visit(where+"."+t.Method(i).Name(), t.Method(i).Type())
			}
			for i := range t.NumEmbeddeds() {
				visit(where, t.EmbeddedType(i))
			}
		case *types.TypeParam:
			visit(where, t.Constraint())
		case *types.Union:
			for i := range t.Len() {
				visit(where, t.Term(i).Type())
			}
		case *types.Tuple:
			for i := range t.Len() {
				visit(where, t.At(i).Type())
			}
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		walked++
		switch obj := obj.(type) {
		case *types.TypeName:
			if obj.IsAlias() {
				visit(name+" (an alias)", obj.Type())
				continue
			}
			visit(name, obj.Type())
		case *types.Func:
			visit(name, obj.Type())
		default: // constants and variables
			visit(name, obj.Type())
		}
	}
	return found, walked
}

// TestSurfaceNamesOnlyStableTypes: the package's API is stable
// (docs/app-testing.md), so no exported name may name a type of another
// package of gwtools or of a dependency, which promise nothing: every
// type its exported names, fields, methods and signatures reach is the
// standard library's or its own.
func TestSurfaceNamesOnlyStableTypes(t *testing.T) {
	t.Parallel()
	s := loadSurface(t)
	found, walked := leaks(s.pkg, s.std)
	for _, l := range found {
		t.Error(l)
	}
	// The surface has 158 exported names, fields and methods; a stable
	// API only adds to them, so fewer says the walk stopped short.
	if walked < 158 {
		t.Errorf("only %d exported names, fields and methods walked, of 158: the walk misses part of the surface", walked)
	}
}

// TestSurfaceCheckFindsLeaks: the walk of TestSurfaceNamesOnlyStableTypes
// finds a type of an unstable package wherever the surface can name one,
// and says which name leaks which type.
func TestSurfaceCheckFindsLeaks(t *testing.T) {
	t.Parallel()
	s := loadSurface(t)
	const src = `package leaky

import (
	"net/http"
	"time"

	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/store"
)

type Faults = server.Faults

type Own struct {
	At      time.Time
	Log     []store.Message
	hidden  server.Entry
	Handler http.Handler
}

func Load(f *server.Faults) (map[string]Own, error) { return nil, nil }

type inner struct{ Entry server.Entry }

type Outer struct{ inner }

func (Own) Entries() []server.Entry { return nil }

func (o *Own) Fine(d time.Duration) *Own { return o }

type Watcher interface{ Watch(chan<- server.DeviceRef) }

var Journal func() *server.Journal

const Limit = server.DefaultJournalSize
`
	f, err := parser.ParseFile(s.fset, "leaky.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := s.check("example.com/leaky", []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	found, _ := leaks(pkg, s.std)
	want := []string{
		"Faults (an alias) names server.Faults, of github.com/gwdmi/gwtools/simulator/server: neither the standard library nor leaky",
		"Journal (result) names server.Journal",
		"Load (parameter f) names server.Faults",
		"Own.Entries (result) names server.Entry",
		"Own.Log names store.Message, of github.com/gwdmi/gwtools/simulator/store",
		"Outer.inner (through unexported inner).Entry names server.Entry",
		"Watcher.Watch (parameter 1) names server.DeviceRef",
	}
	if len(found) != len(want) {
		t.Errorf("found %d leaks, want %d:\n%s", len(found), len(want), strings.Join(found, "\n"))
	}
	for _, w := range want {
		if !slices.ContainsFunc(found, func(l string) bool { return strings.HasPrefix(l, w) }) {
			t.Errorf("no leak %q among:\n%s", w, strings.Join(found, "\n"))
		}
	}
}

// TestExampleUsesWholeSurface: ExampleServer_surface, which godoc shows
// and go test runs, uses every exported name of the package, every
// exported field of its structs and every method of its types, so that
// the example is the whole API at work.
func TestExampleUsesWholeSurface(t *testing.T) {
	t.Parallel()
	s := loadSurface(t)
	f, err := parser.ParseFile(s.fset, "example_surface_test.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Types: map[ast.Expr]types.TypeAndValue{}}
	pkg, err := s.check(s.pkg.Path()+"_test", []*ast.File{f}, info)
	if err != nil {
		t.Fatal(err)
	}
	var api *types.Package
	for _, p := range pkg.Imports() {
		if p.Path() == s.pkg.Path() {
			api = p
		}
	}
	var example *ast.FuncDecl
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "ExampleServer_surface" {
			example = fd
		}
	}
	if api == nil || example == nil {
		t.Fatal("example_surface_test.go has no ExampleServer_surface using the package")
	}
	used := map[types.Object]bool{}
	var use func(t types.Type)
	use = func(t types.Type) {
		switch t := t.(type) {
		case *types.Named:
			used[t.Obj()] = true
		case *types.Pointer:
			use(t.Elem())
		case *types.Slice:
			use(t.Elem())
		case *types.Map:
			use(t.Key())
			use(t.Elem())
		}
	}
	ast.Inspect(example.Body, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && info.Uses[id] != nil {
			used[info.Uses[id]] = true
		}
		if e, ok := n.(ast.Expr); ok {
			use(info.Types[e].Type)
		}
		return true
	})
	var missing []string
	scope := api.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		if !used[obj] {
			missing = append(missing, name)
		}
		tn, ok := obj.(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		n := tn.Type().(*types.Named)
		if st, ok := n.Underlying().(*types.Struct); ok {
			for i := range st.NumFields() {
				if f := st.Field(i); f.Exported() && !used[f] {
					missing = append(missing, name+"."+f.Name())
				}
			}
		}
		for i := range n.NumMethods() {
			if m := n.Method(i); m.Exported() && !used[m] {
				missing = append(missing, name+"."+m.Name())
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("ExampleServer_surface does not use %s", strings.Join(missing, ", "))
	}
}
