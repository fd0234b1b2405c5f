// Package mcptools gives Cairn agents the tools of MCP servers (the client
// side of the Model Context Protocol): they become Cairn tools, under
// approval policies taken from their annotations, and an MCP server's
// questions (elicitation) become the inbox's questions (see docs/mcp.md).
// Package mcpserver is the other way round: agents served as MCP tools.
// Both use the official Go SDK.
package mcptools

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/command"
)

// Server says how to reach one MCP server: a command (stdio) or a URL
// (streamable HTTP).
type Server struct {
	// Name prefixes its tools: server.tool (server__tool for the model).
	Name string
	// Command starts the server, speaking MCP on stdin and stdout; it runs
	// in its own process group with Env added and Dir as working directory.
	Command []string
	Env     map[string]string
	Dir     string
	// URL is a streamable HTTP endpoint; Headers go with every request.
	URL     string
	Headers map[string]string
}

// Options are the optional settings of Connect; nil means the defaults.
type Options struct {
	// Logger receives the servers' stderr and the restarts; nil: slog.Default().
	Logger *slog.Logger
	// Timeout bounds one tool call when the tool sets none; 0 means 60s.
	// Time spent waiting for the user's answer to a server's question is
	// not counted.
	Timeout time.Duration
	// HoldFor bounds how long a call that asked the user a question
	// (elicitation) is held for the answer; 0 means one hour. After that
	// the call is cancelled, and the answer, if it comes, finds it gone.
	HoldFor time.Duration
	// MaxResultBytes bounds the text of one result: a larger one is an
	// error result saying so (the call ran); 0 means DefaultMaxResultBytes.
	MaxResultBytes int
}

// DefaultMaxResultBytes is Options.MaxResultBytes when 0.
const DefaultMaxResultBytes = 1 << 20

// Hub holds the connections to MCP servers and their tools as Cairn tools.
type Hub struct {
	servers map[string]*conn
	order   []string
	log     *slog.Logger
	timeout time.Duration
	holdFor time.Duration
	held    held
	// maxResult bounds a result's text (Options.MaxResultBytes).
	maxResult int
}

// conn is one server's session, reconnected after a crash.
type conn struct {
	spec  Server
	log   *slog.Logger
	mu    sync.Mutex
	sess  *sdk.ClientSession
	gone  chan struct{} // closed when sess stops
	cmd   *exec.Cmd
	down  error     // why the session ended, while it is down
	retry time.Time // no reconnect before
	wait  time.Duration
	tools []*sdk.Tool // every tool listed so far, in the server's order
	// listeners hear that tools changed (Toolset.Notify).
	listeners []func()

	callsMu sync.Mutex
	calls   []*heldCall // in flight

	pingTimeout time.Duration // how long a server may take to answer a ping
}

// Connect starts or reaches every server and lists its tools. It fails if
// one cannot be reached: a config that names a server expects it.
func Connect(ctx context.Context, servers []Server, opts *Options) (*Hub, error) {
	if opts == nil {
		opts = &Options{}
	}
	h := &Hub{servers: map[string]*conn{}, log: opts.Logger, timeout: opts.Timeout, holdFor: opts.HoldFor, maxResult: opts.MaxResultBytes}
	if h.maxResult <= 0 {
		h.maxResult = DefaultMaxResultBytes
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.timeout <= 0 {
		h.timeout = 60 * time.Second
	}
	if h.holdFor <= 0 {
		h.holdFor = time.Hour
	}
	for _, s := range servers {
		c := &conn{spec: s, log: h.log.With("mcp_server", s.Name), pingTimeout: 5 * time.Second}
		if err := c.connect(ctx); err != nil {
			h.Close()
			return nil, fmt.Errorf("mcp server %s: %w", s.Name, err)
		}
		tools, err := listTools(ctx, c.sess)
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("mcp server %s: list tools: %w", s.Name, err)
		}
		c.merge(tools)
		h.servers[s.Name] = c
		h.order = append(h.order, s.Name)
	}
	return h, nil
}

// Close ends every session and stops the servers it started.
func (h *Hub) Close() error {
	for _, c := range h.servers {
		c.close()
	}
	return nil
}

// ToolNames lists a server's tools by their MCP names, in its order.
func (h *Hub) ToolNames(server string) []string {
	c := h.servers[server]
	if c == nil {
		return nil
	}
	var out []string
	for _, t := range c.listed() {
		out = append(out, t.Name)
	}
	return out
}

// Servers are the hub's servers' names, in the order they were given.
func (h *Hub) Servers() []string { return slices.Clone(h.order) }

// Listed is the server's tools as it lists them (with their annotations),
// every tool listed so far; nil for a server the hub does not have.
// OnChange hears when it changes.
func (h *Hub) Listed(server string) []*sdk.Tool {
	c := h.servers[server]
	if c == nil {
		return nil
	}
	return slices.Clone(c.listed())
}

// OnChange registers fn to be called, on any goroutine, after a server's
// tools changed (it said so, or it was restarted).
func (h *Hub) OnChange(fn func()) {
	for _, c := range h.servers {
		c.mu.Lock()
		c.listeners = append(c.listeners, fn)
		c.mu.Unlock()
	}
}

// Call runs a server's tool as it is, outside any session (the gateway's
// pass-through of calls that need nobody's approval): within the hub's
// timeout, a server that is down restarted first, a result larger than
// MaxResultBytes an error result. A question the server asks is declined.
func (h *Hub) Call(ctx context.Context, server, tool string, args json.RawMessage) (*sdk.CallToolResult, error) {
	c := h.servers[server]
	if c == nil {
		return nil, fmt.Errorf("no mcp server %q", server)
	}
	sess, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	hc := c.startCall(sess, "", tool, args, h.timeout)
	// The call's own deadline and ctx's end together: whichever is seen
	// first, a call past the timeout is the same error, and the server is
	// probed (it may hang).
	timedOut := func() error {
		hc.cancel()
		go c.probe(hc.sess)
		return fmt.Errorf("mcp server %s: %s gave no result within %s", server, tool, h.timeout)
	}
	for {
		select {
		case <-hc.done:
			if hc.err != nil && errors.Is(hc.err, context.DeadlineExceeded) {
				return nil, timedOut()
			}
			if hc.err != nil {
				return nil, fmt.Errorf("mcp server %s: %s: %w", server, tool, hc.err)
			}
			if n := resultSize(hc.res); n > h.maxResult {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: tooLarge(server, tool, n, h.maxResult)}}}, nil
			}
			return hc.res, nil
		case <-hc.asks:
			hc.replies <- &sdk.ElicitResult{Action: "decline"}
		case <-ctx.Done():
			return nil, timedOut()
		}
	}
}

// CallText runs a server's tool as Call does and returns its result as
// text (what a model would read of it); an error result is an error with
// that text.
func (h *Hub) CallText(ctx context.Context, server, tool string, args json.RawMessage) (string, error) {
	res, err := h.Call(ctx, server, tool, args)
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("mcp server %s: %s: %s", server, tool, resultText(res))
	}
	return resultText(res), nil
}

// resultSize is about how many bytes a result holds.
func resultSize(res *sdk.CallToolResult) int {
	b, _ := json.Marshal(res)
	return len(b)
}

func tooLarge(server, tool string, n, limit int) string {
	return fmt.Sprintf("mcp server %s: the result of %s is %d bytes, more than the %d Cairn passes on (mcp limit); the call ran", server, tool, n, limit)
}

func (c *conn) listed() []*sdk.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tools
}

func listTools(ctx context.Context, sess *sdk.ClientSession) ([]*sdk.Tool, error) {
	var out []*sdk.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// relist lists the server's tools again (it said they changed, or it was
// restarted) and tells the listeners. A tool that is no longer listed is
// kept: a session may have called it, and its next call gets the
// server's error rather than a tool that silently vanished.
func (c *conn) relist(sess *sdk.ClientSession) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := listTools(ctx, sess)
	if err != nil {
		c.log.Warn("listing tools again failed; keeping the ones listed", "err", err)
		return
	}
	for _, fn := range c.merge(tools) {
		fn()
	}
}

// merge adds newly listed tools to the ones listed before (updating those
// listed again) and returns the listeners to tell.
func (c *conn) merge(tools []*sdk.Tool) []func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	merged := slices.Clone(c.tools)
	for _, t := range tools {
		if i := slices.IndexFunc(merged, func(x *sdk.Tool) bool { return x.Name == t.Name }); i >= 0 {
			merged[i] = t
		} else {
			merged = append(merged, t)
		}
	}
	c.tools = merged
	return slices.Clone(c.listeners)
}

// Toolset is the server's tools as a cairn.Toolset, for Agent.Toolsets: it
// follows the server's notifications/tools/list_changed. spec, when not
// nil, gives a tool's overrides (see Tool) by its MCP name.
func (h *Hub) Toolset(server string, spec func(tool string) *cairn.Tool) cairn.Toolset {
	c := h.servers[server]
	if c == nil {
		return nil
	}
	return &toolset{h: h, c: c, spec: spec}
}

type toolset struct {
	h    *Hub
	c    *conn
	spec func(string) *cairn.Tool
}

func (ts *toolset) Tools() []*cairn.Tool {
	var out []*cairn.Tool
	for _, t := range ts.c.listed() {
		var spec *cairn.Tool
		if ts.spec != nil {
			spec = ts.spec(t.Name)
		}
		out = append(out, ts.h.tool(ts.c, t, spec))
	}
	return out
}

func (ts *toolset) Notify(fn func()) {
	ts.c.mu.Lock()
	defer ts.c.mu.Unlock()
	ts.c.listeners = append(ts.c.listeners, fn)
}

// Tool is the server's tool as a Cairn tool named server__tool, with the
// approval its annotations imply (see Approval); spec, when not nil,
// overrides Approval (when not the zero Policy), Approvers, ApprovalRules, Confirmation,
// Timeout, Idempotent, ApprovalTTL and Escalation. Nil when there is no
// such tool.
func (h *Hub) Tool(server, name string, spec *cairn.Tool) *cairn.Tool {
	c := h.servers[server]
	if c == nil {
		return nil
	}
	for _, t := range c.listed() {
		if t.Name == name {
			return h.tool(c, t, spec)
		}
	}
	return nil
}

// ModelName is the provider-safe name the model sees for server.tool.
func ModelName(server, tool string) string {
	safe := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
				return r
			}
			return '_'
		}, s)
	}
	return safe(server) + "__" + safe(tool)
}

// Approval is the policy a tool's annotations give, per the MCP spec's
// defaults: read-only tools never ask; others ask when destructiveHint is
// true or absent. Its rule says why, for clients to show.
func Approval(a *sdk.ToolAnnotations) cairn.Policy {
	switch {
	case a == nil:
		return cairn.Always().Describe("always (no annotations: MCP assumes destructive)")
	case a.ReadOnlyHint:
		return cairn.Never().Describe("never (annotations: read-only)")
	case a.DestructiveHint == nil:
		return cairn.Always().Describe("always (annotations: destructiveHint absent, so destructive)")
	case *a.DestructiveHint:
		return cairn.Always().Describe("always (annotations: destructive)")
	}
	return cairn.Never().Describe("never (annotations: not destructive)")
}

func (h *Hub) tool(c *conn, t *sdk.Tool, spec *cairn.Tool) *cairn.Tool {
	out := &cairn.Tool{Name: ModelName(c.spec.Name, t.Name), Description: t.Description, Approval: Approval(t.Annotations), Timeout: h.timeout,
		Runs: fmt.Sprintf("the tool %s of the MCP server %s", t.Name, c.spec.Name)}
	if t.Annotations != nil {
		out.Idempotent = t.Annotations.IdempotentHint
	}
	if schema, err := json.Marshal(t.InputSchema); err == nil && t.InputSchema != nil {
		out.Parameters = schema
	}
	if spec != nil {
		if !spec.Approval.IsZero() {
			out.Approval = spec.Approval
		}
		if spec.Confirmation != "" {
			out.Confirmation = spec.Confirmation
		}
		if spec.Timeout > 0 {
			out.Timeout = spec.Timeout
		}
		if spec.ApprovalTTL > 0 {
			out.ApprovalTTL = spec.ApprovalTTL
		}
		if spec.Escalation != nil {
			out.Escalation = spec.Escalation
		}
		if spec.Approvers != nil {
			out.Approvers = spec.Approvers
		}
		if len(spec.ApprovalRules) > 0 {
			out.ApprovalRules = spec.ApprovalRules
		}
		out.Idempotent = out.Idempotent || spec.Idempotent
		out.Preview, out.PreviewTimeout = spec.Preview, spec.PreviewTimeout
	}
	name := t.Name
	out.Handler = func(ctx context.Context, args json.RawMessage) (string, error) {
		return h.call(ctx, c, name, args)
	}
	return out
}

// call runs one tool call; a server that is down is restarted first (with
// backoff), and one that fails mid-call gives an error result. A call that
// asked the user a question and was held is taken up again (see elicit.go).
func (h *Hub) call(ctx context.Context, c *conn, name string, args json.RawMessage) (string, error) {
	key := cairn.IdempotencyKey(ctx)
	if hc := h.held.take(key); hc != nil {
		return h.resume(ctx, c, name, hc)
	}
	if len(cairn.Answers(ctx)) > 0 {
		return "", fmt.Errorf("mcp server %s: %s asked the user a question and waited for the answer, but this process no longer holds the call (it restarted, or the answer reached another process): %w", c.spec.Name, name, cairn.ErrInDoubt)
	}
	sess, err := c.session(ctx)
	if err != nil {
		return "", err
	}
	return h.wait(ctx, c, name, c.startCall(sess, key, name, args, h.holdFor))
}

// resultText is what the model sees of a result: text joined, structured
// content as JSON, other content summarised.
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, ct := range res.Content {
		switch x := ct.(type) {
		case *sdk.TextContent:
			parts = append(parts, x.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", x.MIMEType, len(x.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", x.MIMEType, len(x.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s %s]", x.Name, x.URI))
		case *sdk.EmbeddedResource:
			if x.Resource != nil && x.Resource.Text != "" {
				parts = append(parts, x.Resource.Text)
			} else if x.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s, %d bytes]", x.Resource.URI, len(x.Resource.Blob)))
			}
		}
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			structured := string(b)
			if len(parts) == 0 || strings.Join(parts, "\n") != structured {
				parts = append(parts, structured)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// session returns a live session, reconnecting a server that went down
// once its backoff has passed.
func (c *conn) session(ctx context.Context) (*sdk.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != nil {
		return c.sess, nil
	}
	if now := time.Now(); now.Before(c.retry) {
		return nil, fmt.Errorf("mcp server %s is down (%v); restarting in %s", c.spec.Name, c.down, c.retry.Sub(now).Round(time.Millisecond))
	}
	c.log.Warn("restarting mcp server", "after", c.down)
	if err := c.connectLocked(ctx); err != nil {
		c.wait = min(max(2*c.wait, 500*time.Millisecond), 30*time.Second)
		c.retry = time.Now().Add(c.wait)
		c.down = err
		return nil, fmt.Errorf("mcp server %s is down: restart failed: %w", c.spec.Name, err)
	}
	c.wait, c.down = 0, nil
	go c.relist(c.sess) // the restarted server may list other tools
	return c.sess, nil
}

// lost marks the session gone after a failed call, so that the next call
// restarts the server.
func (c *conn) lost(sess *sdk.ClientSession, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != sess {
		return
	}
	c.log.Warn("mcp server failed", "err", err)
	c.stopLocked(false)
	c.down = err
}

func (c *conn) connect(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connectLocked(ctx)
}

func (c *conn) connectLocked(ctx context.Context) error {
	gone := make(chan struct{}) // closed when this session stops: questions end
	client := sdk.NewClient(&sdk.Implementation{Name: "cairn", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return c.elicit(ctx, req, gone)
		},
		ToolListChangedHandler: func(_ context.Context, req *sdk.ToolListChangedRequest) {
			go c.relist(req.Session)
		},
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{
			Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}},
	})
	var transport sdk.Transport
	switch {
	case len(c.spec.Command) > 0:
		cmd := exec.Command(c.spec.Command[0], c.spec.Command[1:]...)
		cmd.Dir = c.spec.Dir
		cmd.Env = os.Environ()
		for k, v := range c.spec.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		command.OwnGroup(cmd) // stopped with its children
		stderr, err := cmd.StderrPipe()
		if err != nil {
			return err
		}
		go c.logLines(stderr)
		c.cmd = cmd
		transport = &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	case c.spec.URL != "":
		transport = &sdk.StreamableClientTransport{Endpoint: c.spec.URL, HTTPClient: &http.Client{Transport: headers{c.spec.Headers}}}
	default:
		return errors.New("neither a command nor a url")
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sess, err := client.Connect(cctx, transport, nil)
	if err != nil {
		killGroup(c.cmd)
		c.cmd = nil
		return err
	}
	c.sess, c.gone = sess, gone
	return nil
}

// logLines passes a server's stderr to the log, a line at a time.
func (c *conn) logLines(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		c.log.Info("mcp server stderr", "line", sc.Text())
	}
}

func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopLocked(true)
}

// stopLocked ends the session and stops the server it started. With wait
// (the hub closing) it returns once they are gone; otherwise (a server lost
// mid-call) they stop in the background, so that the next call need not
// wait for a hung server's grace period to restart it.
func (c *conn) stopLocked(wait bool) {
	if c.gone != nil {
		close(c.gone) // before Close, which waits for the questions' handlers
		c.gone = nil
	}
	sess, cmd := c.sess, c.cmd
	c.sess, c.cmd = nil, nil
	stop := func() {
		if sess != nil {
			// A server that does not exit when its stdin closes (a request
			// of its own still pending) is stopped after a grace period.
			closed := make(chan struct{})
			go func() { sess.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(3 * time.Second):
			}
		}
		killGroup(cmd)
	}
	if wait {
		stop()
	} else {
		go stop()
	}
}

// killGroup stops a command server's process group, if there is one.
func killGroup(cmd *exec.Cmd) {
	command.KillGroup(cmd)
}

// Pid is the process id of a command server, for tests and operators; 0
// when it is not running.
func (h *Hub) Pid(server string) int {
	c := h.servers[server]
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// headers adds fixed headers to every request.
type headers struct{ h map[string]string }

func (t headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}
