package snippets

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every Go snippet of README.md and docs/*.md is in snippets.go, line for
// line (spacing aside), so it compiles against today's API. A block of
// import lines only is checked by its paths being imported here.
func TestDocSnippetsCompile(t *testing.T) {
	src, err := os.ReadFile("snippets.go")
	if err != nil {
		t.Fatal(err)
	}
	compiled := normalize(string(src))
	docs, _ := filepath.Glob("../../../docs/*.md")
	docs = append(docs, "../../../README.md")
	blocks := 0
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range goBlocks(string(text)) {
			blocks++
			if strings.HasPrefix(strings.TrimSpace(b.code), "package ") {
				continue // a whole program: TestLibraryFromACheckout builds it
			}
			imports, code := leadingImports(b.code)
			for _, path := range imports {
				if !strings.Contains(string(src), `"`+path+`"`) {
					t.Errorf("%s:%d: %s is not imported by snippets.go", doc, b.line, path)
				}
			}
			if filepath.Base(doc) == "library.md" {
				checkImports(t, fmt.Sprintf("%s:%d", doc, b.line), imports, code, string(src))
			}
			lines := normalize(code)
			if importsOnly(lines) {
				for _, l := range lines {
					if path := strings.Trim(strings.TrimPrefix(l, "import "), `"`); !strings.Contains(string(src), `"`+path+`"`) {
						t.Errorf("%s:%d: %s is not imported by snippets.go", doc, b.line, path)
					}
				}
				continue
			}
			if at, bad := find(compiled, lines); at < 0 {
				t.Errorf("%s:%d: this Go snippet is not in internal/snippets/snippets.go (from its line %q on); put it there, in a function that compiles, and keep the two the same", doc, b.line, lines[bad])
			}
		}
	}
	if blocks < 10 {
		t.Fatalf("found %d Go snippets in the docs; the extraction is broken", blocks)
	}
}

type block struct {
	line int
	code string
}

// goBlocks are the ```go fenced blocks of a Markdown text.
func goBlocks(md string) []block {
	var out []block
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		start := i + 1
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
		}
		out = append(out, block{line: start, code: strings.Join(lines[start:min(i, len(lines))], "\n")})
	}
	return out
}

var space = regexp.MustCompile(`\s+`)

// normalize is code's non-empty lines, trimmed, with runs of spaces as one
// (gofmt aligns comments; the docs need not).
func normalize(code string) []string {
	var out []string
	for _, l := range strings.Split(code, "\n") {
		if l = strings.TrimSpace(space.ReplaceAllString(l, " ")); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func importsOnly(lines []string) bool {
	for _, l := range lines {
		if !strings.HasPrefix(l, "import ") {
			return false
		}
	}
	return len(lines) > 0
}

// find is where lines start in all, contiguous, or -1 and the index of the
// snippet's line where the longest partial match broke off.
func find(all, lines []string) (at, bad int) {
	best := 0
	for i := range all {
		n := 0
		for n < len(lines) && i+n < len(all) && all[i+n] == lines[n] {
			n++
		}
		if n == len(lines) {
			return i, 0
		}
		best = max(best, n)
	}
	return -1, best
}

// leadingImports splits a snippet into the import paths it starts with
// (import "p", or an import ( … ) group, aliases allowed) and the rest.
func leadingImports(code string) (paths []string, rest string) {
	lines := strings.Split(code, "\n")
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i == len(lines) || !strings.HasPrefix(lines[i], "import ") {
		return nil, code
	}
	path := func(l string) string {
		f := strings.Fields(l)
		if len(f) == 0 {
			return ""
		}
		return strings.Trim(f[len(f)-1], `"`)
	}
	if strings.TrimSpace(lines[i]) != "import (" {
		return []string{path(strings.TrimPrefix(lines[i], "import "))}, strings.Join(lines[i+1:], "\n")
	}
	for i++; i < len(lines) && strings.TrimSpace(lines[i]) != ")"; i++ {
		if p := path(lines[i]); p != "" {
			paths = append(paths, p)
		}
	}
	return paths, strings.Join(lines[min(i+1, len(lines)):], "\n")
}

var (
	importLine = regexp.MustCompile(`(?m)^\s*(?:(\w+)\s+)?"([^"]+)"$`)
	qualifier  = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.[A-Za-z]`)
	literals   = regexp.MustCompile("`[^`]*`|\"(?:\\\\.|[^\"\\\\])*\"|//[^\n]*")
)

// checkImports reports a snippet of library.md whose imports are not
// exactly the packages its code names: each package snippets.go imports
// (by its name there) that the code uses must be in the snippet's
// imports, and each of those must be used.
func checkImports(t *testing.T, where string, imports []string, code, src string) {
	t.Helper()
	byName := map[string]string{} // the packages snippets.go imports, by name
	for _, m := range importLine.FindAllStringSubmatch(src[:strings.Index(src, "\n)\n")], -1) {
		name := m[1]
		if name == "" {
			name = m[2][strings.LastIndex(m[2], "/")+1:]
		}
		byName[name] = m[2]
	}
	used := map[string]bool{}
	for _, m := range qualifier.FindAllStringSubmatch(literals.ReplaceAllString(code, `""`), -1) {
		if path, ok := byName[m[1]]; ok {
			used[path] = true
		}
	}
	for path := range used {
		if !strings.Contains(strings.Join(imports, "\n")+"\n", path+"\n") {
			t.Errorf("%s: the snippet uses %s but does not import it", where, path)
		}
	}
	for _, path := range imports {
		if !used[path] {
			t.Errorf("%s: the snippet imports %s but does not use it", where, path)
		}
	}
}
