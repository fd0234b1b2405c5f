// Package command runs the programs behind command tools and command MCP
// servers: each in its own process group, so stopping one stops the
// children it started too (a shell script's sleep, a server's workers).
package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/cairnhq/cairn/internal/local"
	"github.com/cairnhq/cairn/session"
)

// Tool returns the handler of a command tool: it runs argv in dir with the
// call's arguments (JSON) on stdin, and CAIRN_IDEMPOTENCY_KEY and
// CAIRN_TOOL (name) in its environment. Its stdout, without the trailing
// newlines, is the result; a non-zero exit is an error carrying stderr (or
// stdout). When the call's context ends the whole process group is killed.
//
// A tool that finishes later (later) also gets CAIRN_CALLBACK_URL, where
// the work it starts sends its result; its exit 0 means "started", and
// its stdout (the first maxStartedMessage characters) is shown while the call
// waits.
func Tool(name string, argv []string, dir string, later bool) func(context.Context, json.RawMessage) (string, error) {
	return func(ctx context.Context, args json.RawMessage) (string, error) {
		env := []string{"CAIRN_TOOL=" + name}
		// The call the runner runs (local.CallFrom): this package stays
		// below the root package, which serves it to config only.
		call := local.CallFrom(ctx)
		key := ""
		if call != nil {
			key = call.Key
		}
		env = append(env, "CAIRN_IDEMPOTENCY_KEY="+key)
		if later {
			if call == nil {
				return "", errors.New("command tool " + name + " finishes later, and needs the callback URL of a call a cairn.Runner runs")
			}
			url, err := call.CallbackURL(ctx)
			if err != nil {
				return "", err
			}
			env = append(env, "CAIRN_CALLBACK_URL="+url)
		}
		var stdout bytes.Buffer
		if err := run(ctx, argv, dir, args, env, &stdout); err != nil {
			return "", err
		}
		out := strings.TrimRight(stdout.String(), "\n")
		if later {
			msg, _ := session.Fold(strings.TrimSpace(out), maxStartedMessage)
			return "", &local.PendingError{Message: msg} // cairn.Pending
		}
		return out, nil
	}
}

// Preview returns the dry run of a command tool's calls (a tool's
// "preview:"): argv runs in dir as a command tool's does, with the call's
// arguments on stdin, CAIRN_TOOL (name) and CAIRN_PREVIEW=1 in its
// environment; its stdout, of at most limit bytes (truncated reports a
// cut), is the preview. A non-zero exit is an error carrying stderr.
func Preview(name string, argv []string, dir string, limit int) func(context.Context, json.RawMessage) (out string, truncated bool, err error) {
	return func(ctx context.Context, args json.RawMessage) (string, bool, error) {
		stdout := &capped{max: limit}
		if err := run(ctx, argv, dir, args, []string{"CAIRN_TOOL=" + name, "CAIRN_PREVIEW=1"}, stdout); err != nil {
			return "", false, err
		}
		return strings.TrimRight(stdout.buf.String(), "\n"), stdout.cut, nil
	}
}

// run runs argv in dir in its own process group with stdin on its stdin
// and env added to this process's environment, writing its stdout to
// stdout. When ctx ends the whole group is killed, and ctx's error is
// returned; a non-zero exit is an error carrying stderr (or stdout).
func run(ctx context.Context, argv []string, dir string, stdin []byte, env []string, stdout io.Writer) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = append(os.Environ(), env...)
	OwnGroup(cmd)
	cmd.Cancel = func() error { return KillGroup(cmd) }
	cmd.WaitDelay = 2 * time.Second
	stderr := &capped{max: maxErrorBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.buf.String())
		if msg == "" {
			if b, ok := stdout.(interface{ String() string }); ok {
				msg = strings.TrimSpace(b.String())
			}
		}
		return fmt.Errorf("%v: %s", err, msg)
	}
	return nil
}

// capped keeps the first max bytes written to it and drops the rest
// (cut says some were), so a command that prints without end costs at
// most max bytes of memory.
type capped struct {
	buf bytes.Buffer
	max int
	cut bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.cut = true
		c.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.buf.Write(p)
}

// String is what was kept.
func (c *capped) String() string { return c.buf.String() }

// maxErrorBytes bounds the stderr a failed command's error carries.
const maxErrorBytes = 4 << 10

// maxStartedMessage bounds what a waiting command's stdout shows.
const maxStartedMessage = 2000
