// Package temporaltest starts a Temporal dev server for tests: the
// Temporal CLI's `temporal server start-dev`, on free loopback ports with
// its own database file. The server is not a Go dependency of Cairn; the
// CLI is installed by .ci/run (or found on the PATH).
package temporaltest

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// CLI finds the Temporal CLI: $CAIRN_TEMPORAL_CLI, `temporal` on the PATH,
// or the copy .ci/run caches; it skips the test, saying how to install
// one, when there is none.
func CLI(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CAIRN_TEMPORAL_CLI"); p != "" {
		return p
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "cairn-ci", "temporal-1.5.1", "temporal")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("no Temporal CLI: install it with `go install github.com/temporalio/cli/cmd/temporal@v1.5.1` (.ci/run does) or set CAIRN_TEMPORAL_CLI")
	return ""
}

// Server starts a dev server for the test and returns its frontend
// address (HOST:PORT) once it accepts connections; it stops with the test.
// Its database is in memory: the server outlives no test.
func Server(t testing.TB) string {
	return start(t, nil)
}

// ServerOnDisk is Server with its database in a file (durable commits,
// as a real cluster makes them: slower).
func ServerOnDisk(t testing.TB) string {
	return start(t, []string{"--db-filename", filepath.Join(t.TempDir(), "temporal.db")})
}

func start(t testing.TB, extra []string) string {
	t.Helper()
	cli := CLI(t)
	port := freePort(t)
	args := append([]string{"server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", fmt.Sprint(port),
		"--ui-port", fmt.Sprint(freePort(t)), "--http-port", fmt.Sprint(freePort(t)), "--metrics-port", fmt.Sprint(freePort(t)),
		"--log-level", "error",
		// One partition per task queue: with the default four, a task can
		// land where no poller waits and be forwarded (tens of ms each).
		"--dynamic-config-value", "matching.numTaskqueueReadPartitions=1",
		"--dynamic-config-value", "matching.numTaskqueueWritePartitions=1"}, extra...)
	cmd := exec.Command(cli, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
	}
	t.Fatal("the Temporal dev server did not listen within 30 s")
	return ""
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
