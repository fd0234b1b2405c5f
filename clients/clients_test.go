// Package clients_test runs the Python and TypeScript clients' own test
// suites against a real cairn serve, so that `go test ./...` covers them.
package clients_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// dir is this directory, clients/.
func dir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// cairnBinary builds cmd/cairn once per test into a temporary directory.
func cairnBinary(t *testing.T) string {
	t.Helper()
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
