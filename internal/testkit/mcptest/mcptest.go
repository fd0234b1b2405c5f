// Package mcptest finds the real MCP servers the tests run: the npm
// packages pinned in mcp/testdata/servers (npm ci installs them; .ci/run
// does).
package mcptest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Server returns the path of an installed MCP server's executable (as in
// node_modules/.bin), or skips the test saying how to install them.
func Server(t testing.TB, bin string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "..", "mcp", "testdata", "servers", "node_modules", ".bin", bin)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("the MCP test servers are not installed: (cd mcp/testdata/servers && npm ci) with Node 20; .ci/run does it (%s missing)", bin)
	}
	return path
}
