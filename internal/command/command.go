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
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = dir
		cmd.Stdin = bytes.NewReader(args)
		// The call the runner runs (local.CallFrom): this package stays
		// below the root package, which serves it to config only.
		call := local.CallFrom(ctx)
		key := ""
		if call != nil {
			key = call.Key
		}
		cmd.Env = append(os.Environ(), "CAIRN_IDEMPOTENCY_KEY="+key, "CAIRN_TOOL="+name)
		if later {
			if call == nil {
				return "", errors.New("command tool " + name + " finishes later, and needs the callback URL of a call a cairn.Runner runs")
			}
			url, err := call.CallbackURL(ctx)
			if err != nil {
				return "", err
			}
			cmd.Env = append(cmd.Env, "CAIRN_CALLBACK_URL="+url)
		}
		OwnGroup(cmd)
		cmd.Cancel = func() error { return KillGroup(cmd) }
		cmd.WaitDelay = 2 * time.Second
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if err != nil {
			msg := strings.TrimSpace(stderr.String())
			if msg == "" {
				msg = strings.TrimSpace(stdout.String())
			}
			return "", fmt.Errorf("%v: %s", err, msg)
		}
		out := strings.TrimRight(stdout.String(), "\n")
		if later {
			msg, _ := session.Fold(strings.TrimSpace(out), maxStartedMessage)
			return "", &local.PendingError{Message: msg} // cairn.Pending
		}
		return out, nil
	}
}

// maxStartedMessage bounds what a waiting command's stdout shows.
const maxStartedMessage = 2000
