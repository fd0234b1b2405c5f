package snippets

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// docs/library.md's first steps work as written: a module of its own with
// the go.mod the page shows (its replace pointed at this checkout) builds
// and runs the page's whole first program, which prints what its comments
// say.
func TestLibraryFromACheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	text, err := os.ReadFile("../../../docs/library.md")
	if err != nil {
		t.Fatal(err)
	}
	gomod := fenced(string(text), "go.mod")
	var program string
	for _, b := range goBlocks(string(text)) {
		if strings.HasPrefix(strings.TrimSpace(b.code), "package main") {
			program = b.code
			break
		}
	}
	if gomod == "" || program == "" || !strings.Contains(gomod, "=> ../cairn") {
		t.Fatalf("docs/library.md has no go.mod block with a replace => ../cairn (%q), or no whole program", gomod)
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(strings.Replace(gomod, "=> ../cairn", "=> "+root, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	// go mod tidy takes the go.sum entries from this checkout's module
	// cache (or the proxy), as the page says.
	for _, args := range [][]string{{"mod", "tidy"}, {"run", "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if args[0] == "run" {
			for _, want := range []string{"paused deploy\n", "completed Done: deployed to production\n"} {
				if !strings.Contains(string(out), want) {
					t.Fatalf("the program printed:\n%s\nwant %q (as its comments say)", out, want)
				}
			}
		}
	}
}

// fenced is the first block fenced as ```lang in md.
func fenced(md, lang string) string {
	lines := strings.Split(md, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "```"+lang {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) == "```" {
				return strings.Join(lines[i+1:j], "\n") + "\n"
			}
		}
	}
	return ""
}

// docs/comparison.md describes Cairn's API as it is: options structs and
// a tool built from a struct and a function (an earlier text said tools
// took functional options, which they never did).
func TestComparisonDescribesTheAPI(t *testing.T) {
	b, err := os.ReadFile("../../../docs/comparison.md")
	if err != nil {
		t.Fatal(err)
	}
	if text := string(b); strings.Contains(text, "tools take functional options") || !strings.Contains(text, "cairn.NewTool(&cairn.Tool{") {
		t.Fatal("docs/comparison.md misdescribes how a tool is built: it is cairn.NewTool(&cairn.Tool{…}, fn), an options struct")
	}
}

// docs/architecture.md's tree lists every package `go list ./...` lists,
// and nothing else: a package added, moved or removed fails until the
// page says so.
func TestArchitectureTreeIsTheTree(t *testing.T) {
	text, err := os.ReadFile("../../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, line := range strings.Split(fenced(string(text), "tree"), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			documented = append(documented, f[0])
		}
	}
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = "../../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var listed []string
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, "github.com/cairnhq/cairn"), "/")
		listed = append(listed, cmp.Or(rel, "."))
	}
	slices.Sort(documented)
	slices.Sort(listed)
	if !slices.Equal(documented, listed) {
		t.Fatalf("docs/architecture.md's tree and go list ./... differ:\n  only in the page: %v\n  only in go list: %v", minus(documented, listed), minus(listed, documented))
	}
}

// minus is a without b's elements.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// A doc.go that lists its package's files (internal/local's does, by
// concept) names every one of them: a file added without a line fails.
func TestDocFilesNameEveryFile(t *testing.T) {
	var docs []string
	err := filepath.WalkDir("../../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.Name() == "doc.go" {
			docs = append(docs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(text), ".go:") && !strings.Contains(string(text), ".go,") {
			continue // it lists no files
		}
		checked++
		files, _ := filepath.Glob(filepath.Join(filepath.Dir(doc), "*.go"))
		for _, f := range files {
			name := filepath.Base(f)
			if strings.HasSuffix(name, "_test.go") || name == "doc.go" {
				continue
			}
			if !strings.Contains(string(text), name) {
				t.Errorf("%s lists its package's files but not %s: add a line for it", doc, name)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no doc.go lists its files; internal/local/doc.go should")
	}
}
