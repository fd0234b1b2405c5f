package engine

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

func (a *Agent) toolNames(mode session.Mode) []string {
	names := make([]string, 0, len(a.Definitions)+1)
	for _, d := range a.Definitions {
		names = append(names, d.Name)
	}
	if mode == session.ModeInteractive {
		names = append(names, CompleteTool)
	}
	if len(names) == 0 {
		return []string{"(none)"}
	}
	return names
}

func (m *Machine) agentNames() []string {
	names := make([]string, 0, len(m.agents))
	for n := range m.agents {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ToolArgs is a tool call's arguments, both as the JSON text and decoded.
type ToolArgs struct {
	Raw   json.RawMessage
	Value any
}

// Tool is what the engine needs to know about a tool: pure functions only.
type Tool struct {
	Definition model.ToolDefinition
	// Validate checks decoded arguments against the tool's schema.
	Validate func(v any) error
	// Accepts, when set, tells from the arguments' JSON text alone that
	// Validate would pass them (false: not sure, decode and Validate): a
	// call that needs its arguments only checked is not decoded at all.
	Accepts func(raw string) bool
	// NeedsApproval reports whether a call with these arguments waits for a
	// person. Nil means never.
	NeedsApproval func(args ToolArgs) (bool, error)
	// Approvers says who may approve a call with these arguments (groups,
	// how many people, not the requester); nil, or a nil result: any
	// approver. An error refuses the call (it fails closed).
	Approvers func(args ToolArgs) (*session.Approvers, error)
	// Confirm renders the confirmation message shown to the approver. Nil
	// means a generic message.
	Confirm func(args ToolArgs) (string, error)
	// Idempotent tools are re-run after a crash; others ask a person first.
	Idempotent bool
	// Preview says the tool has a dry run: the driver computes it
	// (RunPreviews) before the session pauses on a call's approval.
	Preview bool
	// ApprovalTTL, when positive, is how long an approval request waits for a
	// decision before its outcome at expiry (rejected: "approval expired").
	ApprovalTTL time.Duration
	// Rules says whether people may grant standing rules for the tool's
	// calls, and for how long.
	Rules RulePolicy
	// Escalation says, for a call with these arguments, when its approval
	// (or its external wait) reminds and escalates, and what happens at
	// its deadline; nil, or a nil result: nothing, and expiry rejects.
	Escalation func(args ToolArgs) (*session.Escalation, error)
	// Kind says what a call does: run a function (""), start a child frame
	// (ToolAgent) or hand the frame over to another agent (ToolHandoff).
	Kind ToolKind
	// Target is the agent a ToolAgent or ToolHandoff tool runs.
	Target string
	// Mode is session.ModeTool or session.ModeInteractive for a ToolAgent tool.
	Mode session.Mode
	// ResultSchema, for a tool whose result arrives later (a client tool,
	// or one that waits on a system), is the JSON Schema a completion's
	// output must match, and CheckResult its compiled check.
	ResultSchema json.RawMessage
	CheckResult  func(v any) error
	// Wait, for a tool whose work finishes later, is its deadline and what
	// happens when it passes; nil: it may wait without a deadline.
	Wait *Wait
}

// Wait is a deadline for a call that waits on a system.
type Wait struct {
	// Timeout is how long the call waits for its result; 0: no deadline.
	Timeout time.Duration
	// OnTimeout is what happens then ("" means session.OnTimeoutError).
	OnTimeout session.OnTimeout
	// Retries bounds OnTimeoutRetry: the tool starts again at most this
	// many times (0 means DefaultWaitRetries); then the call fails.
	Retries int
}

// DefaultWaitRetries is Wait.Retries when 0.
const DefaultWaitRetries = 2

// ToolKind says how the engine carries out a call.
type ToolKind string

// Tool kinds.
const (
	ToolFunction ToolKind = ""
	ToolAgent    ToolKind = "agent"
	ToolHandoff  ToolKind = "handoff"
	// ToolClient tools have no implementation here: a call waits for the
	// caller to run it and complete it (an interrupt of kind client).
	ToolClient ToolKind = "client"
)

// Agent is what the engine needs to know about an agent.
type Agent struct {
	Name          string
	Instructions  string
	Tools         map[string]*Tool
	Definitions   []model.ToolDefinition // in the order the model sees them
	MaxIterations int
	// OutputSchema, when set, is the JSON Schema the final answer must
	// match: the model is asked for it, and an answer that is not JSON or
	// fails CheckOutput is sent back (output_rejected) up to OutputRetries
	// times before the frame fails with invalid_output.
	OutputSchema  json.RawMessage
	CheckOutput   func(v any) error
	OutputRetries int
	// Review, when set, says whether a final answer that matches the
	// output schema waits for a person first (given the answer's JSON).
	Review func(output json.RawMessage) (bool, error)
	// Direct agents have no model: a session starts with the one call its
	// starter asks for (Start.Call), goes through the tool's policies like
	// a model's call, and answers with the call's result.
	Direct bool
	// CallerTool, for a direct agent, is the tool of a call whose name
	// Tools does not have: the caller's own function (an approval request
	// names any tool).
	CallerTool *Tool
	// NoSenderTools refuses messages that declare tools of their own
	// (UserMessage.Tools, AG-UI frontend tools).
	NoSenderTools bool
	// Definition is the content hash of the agent's definition as this
	// machine has it (the driver computes it): recorded when a session of
	// the agent starts (State.Definition). "" records none.
	Definition string
	// FollowLatest (on_new_version: latest): a session of the agent that
	// ran under another definition goes on under this machine's, and the
	// step records definition_changed. Without it the driver steps the
	// session with a machine of its own definition.
	FollowLatest bool
}

// maxSenderTools bounds the tools one message may declare.
const maxSenderTools = 64

// checkSenderTools checks the tools a message declares: allowed for the
// agent, named as tools are, none twice or named as one of the agent's,
// parameters a JSON object.
func checkSenderTools(a *Agent, tools []model.ToolDefinition) error {
	if len(tools) == 0 {
		return nil
	}
	if a.NoSenderTools || a.Direct {
		return errorf(session.CodeInvalidRequest, "agent %q takes no tools from the client (its configuration forbids frontend tools); send the message without tools", a.Name)
	}
	if len(tools) > maxSenderTools {
		return errorf(session.CodeInvalidRequest, "tools: %d declared; at most %d", len(tools), maxSenderTools)
	}
	seen := map[string]bool{}
	for i, t := range tools {
		switch {
		case !senderToolName.MatchString(t.Name):
			return errorf(session.CodeInvalidRequest, "tools[%d].name: %q is not a tool name (1–64 letters, digits, _ or -)", i, t.Name)
		case seen[t.Name]:
			return errorf(session.CodeInvalidRequest, "tools[%d].name: %q is declared twice", i, t.Name)
		case a.Tools[t.Name] != nil || t.Name == CompleteTool:
			return errorf(session.CodeInvalidRequest, "tools[%d].name: agent %q has a tool %q of its own; name the client's tool otherwise", i, a.Name, t.Name)
		case len(t.Parameters) > 0 && !isJSONObject(string(t.Parameters)):
			return errorf(session.CodeInvalidRequest, "tools[%d].parameters: the JSON Schema of %q's arguments must be a JSON object", i, t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}

var senderToolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// toolOf is the tool of a call named name in frame f: the agent's, or one
// the frame's sender runs itself (a client tool whose arguments are checked
// against the parameters it declared).
func (s *stepper) toolOf(a *Agent, f *Frame, name string) *Tool {
	if t := a.tool(name); t != nil || f == nil {
		return t
	}
	for _, d := range f.SenderTools {
		if d.Name != name {
			continue
		}
		t := &Tool{Definition: d, Kind: ToolClient}
		if check := s.m.opts.CheckAnswer; check != nil && len(d.Parameters) > 0 {
			t.Validate = func(v any) error { return check(d.Parameters, v) }
		}
		return t
	}
	return nil
}

// tool is the agent's tool named name, nil when it has none.
func (a *Agent) tool(name string) *Tool {
	if t := a.Tools[name]; t != nil {
		return t
	}
	return a.CallerTool
}

// DefaultOutputRetries is Agent.OutputRetries when 0.
const DefaultOutputRetries = 2

// checkOutput decodes and validates a final answer against the agent's
// output schema: the value, or why the model must answer again.
func (a *Agent) checkOutput(text string) (json.RawMessage, string) {
	var v any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, "your answer is not a JSON value"
	}
	if a.CheckOutput != nil {
		if _, err := guarded("the output validator", func() (struct{}, error) { return struct{}{}, a.CheckOutput(v) }); err != nil {
			return nil, "your answer does not match the output schema: " + err.Error()
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(strings.TrimSpace(text))); err != nil {
		return nil, "your answer is not a JSON value"
	}
	return buf.Bytes(), ""
}

// RulePolicy bounds the standing rules of a tool (session.Rule).
type RulePolicy struct {
	// Forbidden: no standing rule may be granted for the tool, and none
	// decides its calls.
	Forbidden bool
	// MaxDuration is the longest a rule may last; 0:
	// session.DefaultRuleDuration.
	MaxDuration time.Duration
	// Unbounded allows rules that never expire.
	Unbounded bool
}

// Max is the longest a rule may last.
func (p RulePolicy) Max() time.Duration {
	if p.MaxDuration > 0 {
		return p.MaxDuration
	}
	return session.DefaultRuleDuration
}
