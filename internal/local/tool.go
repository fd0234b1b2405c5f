package local

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// Agent is a cairn.Agent as the runner takes it: its tools are compiled by
// package cairn, on demand, because a toolset's may change while it runs.
type Agent struct {
	Name, Instructions string
	Model              model.Model
	// MaxIterations is the model calls allowed per turn; 0 means
	// DefaultMaxIterations.
	MaxIterations int
	// Tools compiles the agent's tools as they are now: its own and its
	// toolsets'.
	Tools func() ([]*Tool, error)
	// OutputSchema, CheckOutput and OutputRetries are the final answer's
	// schema, its compiled check, and the answers sent back before the
	// frame fails (see engine.Agent).
	OutputSchema  json.RawMessage
	CheckOutput   func(v any) error
	OutputRetries int
	// Review says whether an answer waits for a person (nil: never).
	Review func(output json.RawMessage) (bool, error)
	// Notify, when set, registers fn to be called after the agent's tools
	// changed (a toolset said so). An agent with Notify may come to have
	// tools with an approval TTL, so the expiry sweeper runs for it.
	Notify func(fn func())
	// Direct agents have no Model (engine.Agent.Direct); CallerTool is
	// the tool of the calls of names they do not list (nil: none).
	Direct     bool
	CallerTool *Tool
	// NoClientTools refuses tools a caller declares (engine.Agent.NoSenderTools).
	NoClientTools bool
	// Spec is the agent's part of its definition (Definition), as package
	// cairn writes it: everything of it but its tools and what cannot be
	// stored (its model, handlers).
	Spec json.RawMessage
	// FollowLatest: a session of the agent resumes under the agent as
	// deployed now (on_new_version: latest) rather than under the
	// definition it ran under (engine.Agent.FollowLatest).
	FollowLatest bool
}

// Tool is a cairn.Tool compiled: what the engine knows of it, the handler
// the runner runs, and how GET /v1/agents describes it.
type Tool struct {
	Engine  *engine.Tool
	Handler func(ctx context.Context, args json.RawMessage) (string, error)
	// Timeout bounds one run of Handler; 0 means none.
	Timeout time.Duration
	Info    session.ToolInfo
	// Preview is the tool's dry run (cairn.Tool.Preview), bounded by
	// PreviewTimeout (0: DefaultPreviewTimeout); nil: none. Engine.Preview
	// is set with it.
	Preview        func(ctx context.Context, args json.RawMessage) (session.Preview, error)
	PreviewTimeout time.Duration
	// Spec is the tool's part of its agent's definition (Definition), as
	// package cairn writes it.
	Spec json.RawMessage
}

// Call is what a running tool finds in its context: its idempotency key
// and the answers to the questions it asked so far.
type Call struct {
	// Key is the call's idempotency key (cairn.IdempotencyKey).
	Key string
	ask askState
	// The session, the runner and the waits of the call before this run:
	// what signs the URL that completes the wait this run may start.
	session, nonce string
	waits, reruns  int
	r              *Runner
}

// CallbackURL returns the signed one-time URL that completes this call if
// it returns a PendingError (cairn.CallbackURL).
func (c *Call) CallbackURL(ctx context.Context) (string, error) {
	if c.r == nil {
		return "", errors.New("cairn: this call has no callback URL")
	}
	return c.r.callbackURL(ctx, c.session, c.nonce, engine.WaitID(c.Key, c.waits, c.reruns))
}

// PendingError is what a tool returns when the work it started finishes
// later (cairn.Pending): the call waits for its result.
type PendingError struct {
	Handle, Message string
}

func (e *PendingError) Error() string {
	return "cairn: the tool started work that finishes later (" + e.Handle + "): " + e.Message
}

type callKey struct{}

// callContext carries a tool call in its context: what context.WithValue
// does, with the Call in the same allocation.
type callContext struct {
	context.Context
	call Call
}

// Value is the call for callKey, the parent's value otherwise.
func (c *callContext) Value(key any) any {
	if key == (callKey{}) {
		return &c.call
	}
	return c.Context.Value(key)
}

// CallFrom returns the tool call running with ctx, or nil outside one.
func CallFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}
