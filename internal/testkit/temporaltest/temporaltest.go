// Package temporaltest starts a Temporal dev server for tests: the
// Temporal CLI's `temporal server start-dev`, on free loopback ports with
// its own database file. The server is not a Go dependency of Cairn; the
// CLI is installed by .ci/run (or found on the PATH).
package temporaltest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	// A port picked free may be taken by another test's process before the
	// server binds it: the server then exits, and a new set of ports is tried.
	var why string
	for range 3 {
		addr, err := try(t, cli, extra)
		if err == nil {
			return addr
		}
		why = err.Error()
	}
	t.Fatalf("the Temporal dev server did not start: %s", why)
	return ""
}

// try starts a dev server on free ports and waits until it listens (60 s:
// a loaded machine), or until it exits.
func try(t testing.TB, cli string, extra []string) (string, error) {
	port := freePort(t)
	args := append([]string{"server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", fmt.Sprint(port),
		"--ui-port", fmt.Sprint(freePort(t)), "--http-port", fmt.Sprint(freePort(t)), "--metrics-port", fmt.Sprint(freePort(t)),
		"--log-level", "error",
		// One partition per task queue: with the default four, a task can
		// land where no poller waits and be forwarded (tens of ms each).
		"--dynamic-config-value", "matching.numTaskqueueReadPartitions=1",
		"--dynamic-config-value", "matching.numTaskqueueWritePartitions=1"}, extra...)
	cmd := exec.Command(cli, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() { cmd.Process.Kill(); <-exited }
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case <-exited:
			return "", fmt.Errorf("it exited: %s", lastLine(stderr.String()))
		default:
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Cleanup(stop)
			return addr, nil
		}
	}
	stop()
	return "", fmt.Errorf("it did not listen on %s within 60 s", addr)
}

// lastLine is the end of a process's error output, for a failure message.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "(no output)"
	}
	return s
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
