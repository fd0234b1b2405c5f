package engine

import (
	"encoding/json"
	"github.com/cairnhq/cairn/session"
	"sort"
	"time"

	"github.com/cairnhq/cairn/model"
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
	// NeedsApproval reports whether a call with these arguments waits for a
	// person. Nil means never.
	NeedsApproval func(args ToolArgs) (bool, error)
	// Confirm renders the confirmation message shown to the approver. Nil
	// means a generic message.
	Confirm func(args ToolArgs) (string, error)
	// Idempotent tools are re-run after a crash; others ask a person first.
	Idempotent bool
	// ApprovalTTL, when positive, is how long an approval request waits for a
	// decision before it counts as rejected ("approval expired").
	ApprovalTTL time.Duration
	// Kind says what a call does: run a function (""), start a child frame
	// (ToolAgent) or hand the frame over to another agent (ToolHandoff).
	Kind ToolKind
	// Target is the agent a ToolAgent or ToolHandoff tool runs.
	Target string
	// Mode is session.ModeTool or session.ModeInteractive for a ToolAgent tool.
	Mode session.Mode
}

// ToolKind says how the engine carries out a call.
type ToolKind string

// Tool kinds.
const (
	ToolFunction ToolKind = ""
	ToolAgent    ToolKind = "agent"
	ToolHandoff  ToolKind = "handoff"
)

// Agent is what the engine needs to know about an agent.
type Agent struct {
	Name          string
	Instructions  string
	Tools         map[string]*Tool
	Definitions   []model.ToolDefinition // in the order the model sees them
	MaxIterations int
}
