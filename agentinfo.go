package cairn

import (
	"encoding/json"

	"github.com/cairnhq/cairn/internal/engine"
)

// AgentInfo describes an agent for clients (GET /v1/agents): its tools and
// when each waits for a person.
type AgentInfo struct {
	Name  string     `json:"name"`
	Tools []ToolInfo `json:"tools"`
}

// ToolInfo describes one tool of an agent.
type ToolInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is the JSON Schema of the arguments (what an approver's
	// replacement arguments must match).
	Parameters json.RawMessage `json:"parameters"`
	// Kind is "function", "agent" (a sub-agent run to completion),
	// "interactive_agent" (a sub-agent that takes over the conversation)
	// or "handoff"; Agent names the agent of the last three.
	Kind  string `json:"kind"`
	Agent string `json:"agent,omitempty"`
	// Approval says when a call waits for a person: "never", "always", a
	// CEL expression over args, or the words of the tool's Policy.
	Approval     string `json:"approval"`
	Confirmation string `json:"confirmation,omitempty"`
	Idempotent   bool   `json:"idempotent,omitempty"`
	// ApprovalTTL and Timeout are Go durations ("15m0s"), empty for none.
	ApprovalTTL string `json:"approval_ttl,omitempty"`
	Timeout     string `json:"timeout,omitempty"`
}

// Agents describes the runner's agents, in the order NewRunner got them.
func (r *Runner) Agents() []AgentInfo {
	out := make([]AgentInfo, 0, len(r.order))
	for _, name := range r.order {
		info := AgentInfo{Name: name, Tools: []ToolInfo{}}
		c := r.compiled.Load()
		for _, t := range c.order[name] {
			info.Tools = append(info.Tools, toolInfo(c.tools[name][t]))
		}
		out = append(out, info)
	}
	return out
}

func toolInfo(t *compiledTool) ToolInfo {
	info := ToolInfo{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Kind: "function",
		Agent: t.target, Approval: t.Approval.Rule(), Confirmation: t.Confirmation, Idempotent: t.Idempotent}
	switch {
	case t.kind == engine.ToolHandoff:
		info.Kind = "handoff"
	case t.kind == engine.ToolAgent && t.mode == ModeInteractive:
		info.Kind = "interactive_agent"
	case t.kind == engine.ToolAgent:
		info.Kind = "agent"
	}
	if t.ApprovalTTL > 0 {
		info.ApprovalTTL = t.ApprovalTTL.String()
	}
	if t.Timeout > 0 {
		info.Timeout = t.Timeout.String()
	}
	return info
}
