// Package clients_test runs the Python and TypeScript clients' own test
// suites against a real cairn serve, so that `go test ./...` covers them.
package clients_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// dir is this directory, clients/.
func dir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// cairnBinary builds cmd/cairn into a temporary directory.
func cairnBinary(t *testing.T) string {
	t.Helper()
	trackInputs(t)
	bin := filepath.Join(t.TempDir(), "cairn")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.Command("go", "build", "-o", bin, "./cmd/cairn")
	build.Dir = filepath.Join(dir(t), "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/cairn: %v\n%s", err, out)
	}
	return bin
}

// trackInputs reads every file the suites and the binary are made of, so
// that go test's cache, which sees only the files this process opens, runs
// the suites again when any of them changes.
func trackInputs(t *testing.T) {
	t.Helper()
	root := filepath.Join(dir(t), "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", ".git", "__pycache__", "testdata":
				if path != filepath.Join(dir(t), "testdata") {
					return filepath.SkipDir
				}
			}
			return nil
		}
		ext := filepath.Ext(path)
		if ext == ".go" || strings.HasPrefix(path, dir(t)) || ext == ".json" && filepath.Base(filepath.Dir(path)) == "api" ||
			filepath.Base(path) == "go.mod" || strings.Contains(path, string(filepath.Separator)+"web"+string(filepath.Separator)) {
			_, err = os.ReadFile(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// run runs a test suite, failing with its output.
func run(t *testing.T, workdir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = workdir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	t.Logf("%s", out)
}

// The Python client (clients/python) with `python3 -m unittest`.
func TestPythonClient(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed (.ci/run installs it)")
	}
	run(t, filepath.Join(dir(t), "python"), []string{"CAIRN_BIN=" + cairnBinary(t)},
		python, "-m", "unittest", "discover", "-s", "tests", "-t", ".", "-v")
}

// The TypeScript client (clients/typescript) with `node --test`, after
// checking that src/openapi.ts is what openapi-typescript makes of
// api/openapi.json and that dist/ is what tsc makes of src/.
func TestTypeScriptClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (Node 20; .ci/run installs it)")
	}
	ts := filepath.Join(dir(t), "typescript")
	bin := func(name string) string { return filepath.Join(ts, "node_modules", ".bin", name) }
	if _, err := os.Stat(bin("tsc")); err != nil {
		t.Skip("the dev dependencies are not installed: (cd clients/typescript && npm ci); .ci/run does it")
	}
	trackInputs(t)
	tmp := t.TempDir()
	run(t, ts, nil, bin("openapi-typescript"), "../../api/openapi.json", "-o", filepath.Join(tmp, "openapi.ts"))
	sameFiles(t, filepath.Join(tmp, "openapi.ts"), filepath.Join(ts, "src", "openapi.ts"),
		"src/openapi.ts is not generated from api/openapi.json: run `npm run generate && npm run build` in clients/typescript")
	run(t, ts, nil, bin("tsc"), "-p", ".", "--outDir", filepath.Join(tmp, "dist"))
	built, _ := filepath.Glob(filepath.Join(tmp, "dist", "*"))
	committed, _ := filepath.Glob(filepath.Join(ts, "dist", "*"))
	if len(built) != len(committed) {
		t.Fatalf("dist/ holds %d files, tsc makes %d: run `npm run build` in clients/typescript", len(committed), len(built))
	}
	for _, f := range built {
		sameFiles(t, f, filepath.Join(ts, "dist", filepath.Base(f)), "dist/ is not built from src/: run `npm run build` in clients/typescript")
	}
	tests, _ := filepath.Glob(filepath.Join(ts, "test", "*.test.mjs"))
	run(t, ts, []string{"CAIRN_BIN=" + cairnBinary(t)}, node, append([]string{"--test"}, tests...)...)
}

func sameFiles(t *testing.T, a, b, hint string) {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if string(x) != string(y) {
		t.Fatalf("%s differs from %s: %s", b, a, hint)
	}
}
