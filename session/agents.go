package session

import "encoding/json"

// AgentInfo describes an agent for clients (GET /v1/agents): its tools and
// when each waits for a person.
type AgentInfo struct {
	Name  string     `json:"name"`
	Tools []ToolInfo `json:"tools"`
	// Direct agents have no model: each session makes one call its
	// caller asks for (approvals, the MCP gateway); they take no messages.
	Direct bool `json:"direct,omitempty"`
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
	// "handoff" or "client" (run by the caller); Agent names the agent of
	// the agent kinds and handoffs.
	Kind  string `json:"kind"`
	Agent string `json:"agent,omitempty"`
	// Runs says what approving a call runs, in words for the approver: a
	// command line, an MCP server's tool, a built-in. Empty when the tool
	// did not say (a Go function without Tool.Runs, the agent kinds,
	// whose Agent says it).
	Runs string `json:"runs,omitempty"`
	// Approval says when a call waits for a person: "never", "always", a
	// CEL expression over args, or the words of the tool's Policy.
	Approval     string `json:"approval"`
	Confirmation string `json:"confirmation,omitempty"`
	Idempotent   bool   `json:"idempotent,omitempty"`
	// ApprovalTTL and Timeout are Go durations ("15m0s"), empty for none.
	ApprovalTTL string `json:"approval_ttl,omitempty"`
	Timeout     string `json:"timeout,omitempty"`
	// ResultSchema is the JSON Schema a completion's output must match,
	// for a tool whose result arrives later (kind "client", or a tool
	// with a wait); WaitTimeout is that wait's deadline, as a duration.
	ResultSchema json.RawMessage `json:"result_schema,omitempty"`
	WaitTimeout  string          `json:"wait_timeout,omitempty"`
	// Approvers say who may approve its calls (the tool's, or its agent's);
	// ApprovalRules the calls that have other approvers, first match wins.
	Approvers     *Approvers         `json:"approvers,omitempty"`
	ApprovalRules []ApprovalRuleInfo `json:"approval_rules,omitempty"`
}

// ApprovalRuleInfo is one approval rule of a tool: the calls for which
// Condition holds (the config's `if`, a CEL expression over args, or the
// words of the rule's Policy) are approved by Approvers.
type ApprovalRuleInfo struct {
	Condition string `json:"condition"`
	Approvers
}
