package config

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Preflight checks, without side effects, what would certainly fail later
// and returns a warning for each, naming its key path: what the file says
// that loads but will not work as written (an approval rule reading an
// argument the tool's parameters do not have), a command tool's
// or an MCP server's executable that does not exist or cannot be run, and
// a model's base_url that nobody answers (a TCP connection, opened and
// closed; no request is sent). A warning does not stop anything: the
// executable may appear, the server may come up.
func (c *Config) Preflight(ctx context.Context) []string {
	out := slices.Clone(c.warnings)
	commands := c.commands
	for _, s := range c.MCPServers {
		if len(s.Command) > 0 {
			commands = append(commands, keyed[[]string]{"mcp_servers." + s.Name + ".command", s.Command})
		}
	}
	for _, cmd := range commands {
		if err := runnable(cmd.v[0], c.Dir); err != nil {
			out = append(out, fmt.Sprintf("%s: %v; calls of it will fail until it does", cmd.path, err))
		}
	}
	for _, e := range c.endpoints {
		if err := answers(ctx, e.v); err != nil {
			out = append(out, fmt.Sprintf("%s: nothing answers at %s (%v); model calls will fail until it does", e.path, e.v, err))
		}
	}
	return out
}

// runnable reports whether name runs: a path (relative to dir) to an
// executable file, or a program on PATH.
func runnable(name, dir string) error {
	if !strings.ContainsRune(name, filepath.Separator) && !strings.ContainsRune(name, '/') {
		if _, err := exec.LookPath(name); err != nil {
			return fmt.Errorf("%q is not on PATH", name)
		}
		return nil
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	info, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("%s does not exist", path)
	case info.IsDir():
		return fmt.Errorf("%s is a directory", path)
	case runtime.GOOS != "windows" && info.Mode()&0o111 == 0:
		return fmt.Errorf("%s is not executable (chmod +x it)", path)
	}
	return nil
}

// answers opens and closes a TCP connection to the URL's host.
func answers(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("not a URL")
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return err
	}
	return conn.Close()
}
