package cairn_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	gotoken "go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/local"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/session"
)

// TestNoExportedSignatureNamesAnInternalType type-checks every public
// package of the module (from the compiler's export data) and fails when an
// exported name's signature — a function's parameters and results, a
// method of an exported type, an exported field, a variable, an alias —
// names a type of an internal/ package: public API that no code outside
// the module can use.
func TestNoExportedSignatureNamesAnInternalType(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the export data of every package")
	}
	cmd := exec.Command("go", "list", "-deps", "-export", "-f", "{{.ImportPath}}\t{{.Export}}\t{{.Module}}\t{{.Name}}", "./...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	exports := map[string]string{}
	var public []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 4 {
			continue
		}
		path, export, mod, name := f[0], f[1], f[2], f[3]
		exports[path] = export
		if mod == module && name != "main" && export != "" && !isInternal(path) {
			public = append(public, path)
		}
	}
	if len(public) < 10 {
		t.Fatalf("found only %d public packages: %v", len(public), public)
	}
	fset := gotoken.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	var leaks []string
	for _, path := range public {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		leaks = append(leaks, internalNames(pkg)...)
	}
	sort.Strings(leaks)
	for _, l := range leaks {
		t.Error(l)
	}
}

const module = "github.com/cairnhq/cairn"

func isInternal(path string) bool {
	return strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal")
}

// internalNames lists, for each exported name of pkg, the internal types
// its signature names.
func internalNames(pkg *types.Package) []string {
	var out []string
	report := func(where string, typ types.Type) {
		for _, n := range internalTypes(typ, map[types.Type]bool{}) {
			out = append(out, fmt.Sprintf("%s.%s names %s", pkg.Path(), where, n))
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.TypeName:
			if obj.IsAlias() {
				report(name, types.Unalias(obj.Type()))
				continue
			}
			named, ok := obj.Type().(*types.Named)
			if !ok {
				continue
			}
			switch u := named.Underlying().(type) {
			case *types.Struct:
				for f := range u.Fields() {
					if f.Exported() {
						report(name+"."+f.Name(), f.Type())
					}
				}
			case *types.Interface:
				for m := range u.Methods() {
					if m.Exported() {
						report(name+"."+m.Name(), m.Type())
					}
				}
			default:
				report(name, u)
			}
			for m := range named.Methods() {
				if m.Exported() {
					report(name+"."+m.Name(), m.Type())
				}
			}
		default: // funcs, vars, consts
			report(name, obj.Type())
		}
	}
	return out
}

// internalTypes returns the internal named types typ is built of, looking
// through pointers, containers and signatures (not into other named types,
// which their own package answers for).
func internalTypes(typ types.Type, seen map[types.Type]bool) []string {
	if seen[typ] {
		return nil
	}
	seen[typ] = true
	switch t := typ.(type) {
	case *types.Alias:
		return internalTypes(types.Unalias(t), seen)
	case *types.Named:
		var out []string
		// Only this module's internals: another module's internal types
		// reached through its own public aliases (Temporal's worker.Options)
		// can be named by users.
		if p := t.Obj().Pkg(); p != nil && strings.HasPrefix(p.Path(), module+"/") && isInternal(p.Path()) {
			out = append(out, p.Path()+"."+t.Obj().Name())
		}
		for a := range t.TypeArgs().Types() {
			out = append(out, internalTypes(a, seen)...)
		}
		return out
	case *types.Pointer:
		return internalTypes(t.Elem(), seen)
	case *types.Slice:
		return internalTypes(t.Elem(), seen)
	case *types.Array:
		return internalTypes(t.Elem(), seen)
	case *types.Chan:
		return internalTypes(t.Elem(), seen)
	case *types.Map:
		return append(internalTypes(t.Key(), seen), internalTypes(t.Elem(), seen)...)
	case *types.Signature:
		var out []string
		for v := range t.Params().Variables() {
			out = append(out, internalTypes(v.Type(), seen)...)
		}
		for v := range t.Results().Variables() {
			out = append(out, internalTypes(v.Type(), seen)...)
		}
		return out
	case *types.Struct:
		var out []string
		for f := range t.Fields() {
			if f.Exported() || f.Embedded() {
				out = append(out, internalTypes(f.Type(), seen)...)
			}
		}
		return out
	case *types.Interface:
		var out []string
		for m := range t.Methods() {
			out = append(out, internalTypes(m.Type(), seen)...)
		}
		return out
	}
	return nil
}

// Test support lives under internal/testkit and nothing but tests imports
// it: no package of the build (commands, examples, benchmarks included)
// depends on a fake provider or a test helper. And no package under
// internal/ but test support imports the root: the facade stands on top of
// what it delegates to.
func TestTestkitOnlyInTests(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const testkit = "github.com/cairnhq/cairn/internal/testkit"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], testkit) {
			continue
		}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, testkit) {
				t.Errorf("%s imports %s outside its tests: test support is for tests only", f[0], imp)
			}
			if imp == "github.com/cairnhq/cairn" && strings.HasPrefix(f[0], "github.com/cairnhq/cairn/internal/") {
				t.Errorf("%s imports the root package: what the facade delegates to stands below it, never imports it", f[0])
			}
		}
	}
}

// The root re-exports every event-type constant of package session, or
// none: a program that switches on event types finds them all in one
// place.
func TestRootHasEveryEventType(t *testing.T) {
	consts := rootConstants(t)
	for _, typ := range session.AllEventTypes() {
		name := "Event"
		for _, part := range strings.Split(string(typ), "_") {
			name += strings.ToUpper(part[:1]) + part[1:]
		}
		if !consts[name] {
			t.Errorf("the root does not re-export %s (%q)", name, typ)
		}
	}
}

// rootConstants are the names of the root package's constants.
func rootConstants(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(gotoken.NewFileSet(), e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == gotoken.CONST {
				for _, spec := range g.Specs {
					for _, n := range spec.(*ast.ValueSpec).Names {
						out[n.Name] = true
					}
				}
			}
		}
	}
	return out
}

// TestRootHasNoAnyEscapeHatch fails when an exported function or method of
// the root package returns a bare any: a value whose type a caller must
// guess is not API (the Temporal driver once reached the engine that way;
// it uses local.CoreOf now).
func TestRootHasNoAnyEscapeHatch(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := gotoken.NewFileSet()
	var found int
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !fn.Name.IsExported() || fn.Type.Results == nil {
				continue
			}
			found++
			for _, r := range fn.Type.Results.List {
				switch typ := r.Type.(type) {
				case *ast.Ident:
					if typ.Name == "any" {
						t.Errorf("%s: %s returns any", fset.Position(fn.Pos()), fn.Name.Name)
					}
				case *ast.InterfaceType:
					if len(typ.Methods.List) == 0 {
						t.Errorf("%s: %s returns interface{}", fset.Position(fn.Pos()), fn.Name.Name)
					}
				}
			}
		}
	}
	if found < 10 {
		t.Fatalf("found only %d exported functions with results in the root", found)
	}
}

// The Temporal driver finds a runner's engine through local.CoreOf, and
// only a runner made by NewRunner has one.
func TestCoreOfFindsOnlyARunnersCore(t *testing.T) {
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "a", Model: scripted.New()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer runner.Close()
	if _, ok := local.CoreOf(runner); !ok {
		t.Error("no core in a runner from NewRunner")
	}
	if _, ok := local.CoreOf(&cairn.Runner{}); ok {
		t.Error("a core in a zero Runner")
	}
	if _, ok := local.CoreOf("runner"); ok {
		t.Error("a core in a string")
	}
}
