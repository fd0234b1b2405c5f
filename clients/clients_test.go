// Package clients_test runs the Python and TypeScript clients' own test
// suites against a real cairn serve, so that `go test ./...` covers them.
package clients_test

import (
	"bufio"
	"io"
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
			filepath.Base(path) == "go.mod" || strings.Contains(path, string(filepath.Separator)+"web"+string(filepath.Separator)) ||
			strings.Contains(path, filepath.Join("examples", "demo")) {
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

// The Python client's types hold under pyright in strict mode
// (clients/python/pyrightconfig.json): Literal enums, no unknown types.
func TestPythonClientTypes(t *testing.T) {
	py := filepath.Join(dir(t), "python")
	pyright := filepath.Join(py, "typecheck", "node_modules", ".bin", "pyright")
	if _, err := os.Stat(pyright); err != nil {
		t.Skip("pyright is not installed: (cd clients/python/typecheck && npm ci); .ci/run does it")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed (.ci/run installs it)")
	}
	run(t, py, nil, pyright)
}

// The TypeScript client (clients/typescript) with `node --test`, after
// checking that src/openapi.ts is what openapi-typescript makes of
// api/openapi.json and building dist/ with tsc (strict: the type check).
func TestTypeScriptClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (Node 20; .ci/run installs it)")
	}
	ts := filepath.Join(dir(t), "typescript")
	trackInputs(t)
	tmp := t.TempDir()
	run(t, ts, nil, tsBin(t, "openapi-typescript"), "../../api/openapi.json", "-o", filepath.Join(tmp, "openapi.ts"))
	sameFiles(t, filepath.Join(tmp, "openapi.ts"), filepath.Join(ts, "src", "openapi.ts"),
		"src/openapi.ts is not generated from api/openapi.json: run `npm run generate` in clients/typescript")
	buildTS(t)
	tests, _ := filepath.Glob(filepath.Join(ts, "test", "*.test.mjs"))
	run(t, ts, []string{"CAIRN_BIN=" + cairnBinary(t)}, node, append([]string{"--test"}, tests...)...)
}

// An OpenAI Agents SDK agent (@openai/agents, on Node 22 as it needs)
// whose function tool is wrapped by requireApproval pauses in Cairn's
// inbox; approved through REST (with an edit) the tool runs once, and
// rejected the agent sees the reason (clients/typescript/test/openai-agents.mjs).
func TestOpenAIAgentsTool(t *testing.T) {
	ts := filepath.Join(dir(t), "typescript")
	node22 := filepath.Join(dir(t), "..", "server", "testdata", "clients", "node_modules", "node22", "bin", "node")
	if _, err := os.Stat(node22); err != nil {
		t.Skip("Node 22 is not installed: (cd server/testdata/clients && npm ci); .ci/run does it")
	}
	if _, err := os.Stat(filepath.Join(ts, "node_modules", "@openai", "agents")); err != nil {
		t.Skip("@openai/agents is not installed: (cd clients/typescript && npm ci); .ci/run does it")
	}
	buildTS(t)
	run(t, ts, []string{"CAIRN_BIN=" + cairnBinary(t)}, node22, "--test", filepath.Join(ts, "test", "openai-agents.mjs"))
}

// tsBin is a dev dependency's command, or skips the test when they are
// not installed.
func tsBin(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(dir(t), "typescript", "node_modules", ".bin", name)
	if _, err := os.Stat(bin); err != nil {
		t.Skip("the dev dependencies are not installed: (cd clients/typescript && npm ci); .ci/run does it")
	}
	return bin
}

// buildTS builds clients/typescript/dist from src with tsc (strict mode,
// tsconfig.json), as `npm ci` does (prepare): dist/ is built, not
// committed. The tests and the examples import it.
func buildTS(t *testing.T) {
	t.Helper()
	run(t, filepath.Join(dir(t), "typescript"), nil, tsBin(t, "tsc"), "-p", ".")
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

// serveDemo starts cairn serve on a copy of examples/demo (its scripted
// model) and returns its URL.
func serveDemo(t *testing.T) string {
	t.Helper()
	bin := cairnBinary(t)
	work := t.TempDir()
	for _, name := range []string{"cairn.yaml", "deploy.sh", "plan.sh"} {
		b, err := os.ReadFile(filepath.Join(dir(t), "..", "examples", "demo", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "serve", "--config", "cairn.yaml", "--addr", "127.0.0.1:0")
	cmd.Dir = work
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			go func() { _, _ = io.Copy(io.Discard, stderr) }() // drained so the server never blocks on it
			return url
		}
	}
	t.Fatalf("cairn serve exited before listening: %v", cmd.Wait())
	return ""
}

// exampleOutput is what each example prints (in part) against the demo.
var exampleOutput = map[string][]string{
	"python/examples/approve.py":               {"paused", "deploy_code {'environment': 'production'} Deploy to production?", "completed Deployed build 1042 to production."},
	"python/examples/answer.py":                {"Which environment should the release go to", "Planned: build 1042 goes to staging on Tuesday."},
	"python/examples/follow.py":                {"7 turn_paused\n8 decision", "turn_completed", "409 already_decided", "was already decided: approve by"},
	"python/examples/choose.py":                {"approval · Deploy to production?", "Approve (arguments) | Reject (reason)", "completed Deployed build 1042 to production."},
	"typescript/examples/choose.mjs":           {"approval · Deploy to production?", "Approve (arguments) | Reject (reason)", "completed Deployed build 1042 to production."},
	"typescript/examples/approve.mjs":          {"paused", "deploy_code { environment: 'production' } Deploy to production?", "completed Deployed build 1042 to production."},
	"typescript/examples/answer.mjs":           {"Which environment should the release go to", "Planned: build 1042 goes to staging on Tuesday."},
	"typescript/examples/follow.mjs":           {"7 turn_paused\n8 decision", "turn_completed", "409 already_decided", "was already decided: approve by"},
	"typescript/examples/aisdk-chat.mjs":       {"tool-deploy_code { environment: 'production' }", "Deployed build 1042 to production."},
	"python/examples/require_approval.py":      {"asked: Refund 120 EUR on order A-17?", "refunded: {'refunded': 100}"},
	"typescript/examples/require-approval.mjs": {"asked: Refund 120 EUR on A-17?", "refunded: { refunded: 100 }"},
}

// Every example of clients/*/examples runs against the demo and prints what
// it says it does.
func TestExamples(t *testing.T) {
	python, pyErr := exec.LookPath("python3")
	node, nodeErr := exec.LookPath("node")
	_, depsErr := os.Stat(filepath.Join(dir(t), "typescript", "node_modules", "ai"))
	if nodeErr == nil && depsErr == nil {
		buildTS(t) // the examples import @cairnhq/client: its dist/
	}
	url := serveDemo(t)
	files, _ := filepath.Glob(filepath.Join(dir(t), "*", "examples", "*"))
	if len(files) != len(exampleOutput) {
		t.Fatalf("%d examples, %d expected outputs: list each example in exampleOutput", len(files), len(exampleOutput))
	}
	for _, f := range files {
		rel, _ := filepath.Rel(dir(t), f)
		rel = filepath.ToSlash(rel)
		t.Run(rel, func(t *testing.T) {
			want, ok := exampleOutput[rel]
			if !ok {
				t.Fatalf("no expected output for %s", rel)
			}
			var cmd *exec.Cmd
			switch filepath.Ext(f) {
			case ".py":
				if pyErr != nil {
					t.Skip("python3 is not installed (.ci/run installs it)")
				}
				cmd = exec.Command(python, f)
				cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(dir(t), "python"))
			case ".mjs":
				if nodeErr != nil {
					t.Skip("node is not installed (.ci/run installs it)")
				}
				if depsErr != nil {
					t.Skip("(cd clients/typescript && npm ci); .ci/run does it")
				}
				cmd = exec.Command(node, f)
				cmd.Env = os.Environ()
			default:
				t.Fatalf("an example in an unknown language: %s", rel)
			}
			cmd.Env = append(cmd.Env, "CAIRN_URL="+url)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, w := range want {
				if !strings.Contains(string(out), w) {
					t.Errorf("the output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// docs/clients.md shows every example whole, as the file CI runs.
func TestDocsShowTheExamples(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(dir(t), "..", "docs", "clients.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]bool{}
	for _, part := range strings.Split(string(doc), "```")[1:] {
		lang, body, _ := strings.Cut(part, "\n")
		if lang == "python" || lang == "js" {
			blocks[body] = true
		}
	}
	for rel := range exampleOutput {
		b, err := os.ReadFile(filepath.Join(dir(t), filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		if !blocks[string(b)] {
			t.Errorf("docs/clients.md does not show clients/%s as it is (a ```python or ```js block holding the whole file)", rel)
		}
		delete(blocks, string(b))
	}
	for b := range blocks {
		t.Errorf("docs/clients.md shows code that no example holds, so CI does not run it:\n%s", b)
	}
}

// docs/clients.md gives the offline way to use the Python client, the one
// TestExamples runs the examples with (PYTHONPATH at the checkout), and
// says why pip needs an index.
func TestPythonOfflineWayIsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(dir(t), "..", "docs", "clients.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PYTHONPATH=clients/python", "pip install --no-build-isolation ./clients/python", "build isolation"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("docs/clients.md does not say %q", want)
		}
	}
}
