package config

import (
	"fmt"
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/cairnhq/cairn/webhook"
)

// File is the configuration file as written.
type File struct {
	Store     string `yaml:"store"`
	SecretEnv string `yaml:"secret_env"`
	// TokenLedger is a SQLite file recording spent continuation tokens when
	// the store is memory (other stores keep the ledger themselves).
	TokenLedger string      `yaml:"token_ledger"`
	Auth        *AuthConfig `yaml:"auth"`
	// Suggestions says when the inbox offers a standing rule:
	// {min_approvals: 20, min_people: 2} (the defaults), or {off: true}.
	Suggestions *SuggestionsConfig     `yaml:"suggestions"`
	Models      map[string]ModelConfig `yaml:"models"`
	Tools       map[string]ToolConfig  `yaml:"tools"`
	Agents      map[string]AgentConfig `yaml:"agents"`
	// MCPServers are MCP servers whose tools agents may use (server.tool,
	// or server.* for all of them); see docs/mcp.md.
	MCPServers map[string]MCPServerConfig `yaml:"mcp_servers"`
	// Lease is how long a process owns a running turn without renewing it
	// (default 15s); other processes sharing the store take over after it.
	Lease string `yaml:"lease"`
	// ShutdownGrace is how long SIGTERM lets running turns finish before
	// they are handed over to another process (default 30s).
	ShutdownGrace string `yaml:"shutdown_grace"`
	// PublicURL is how people reach the server (https://cairn.example.org):
	// action links in webhooks and inbox links are built from it.
	PublicURL string `yaml:"public_url"`
	// AllowedHosts are Host names a server without auth answers to besides
	// loopback names and public_url's host (docs/web.md).
	AllowedHosts []string `yaml:"allowed_hosts"`
	// AllowedOrigins are web origins besides the server's own that may
	// send state-changing requests (docs/web.md).
	AllowedOrigins []string `yaml:"allowed_origins"`
	// Webhooks are told about interrupts and ended turns; see docs/webhooks.md.
	Webhooks []WebhookConfig `yaml:"webhooks"`
	// Driver runs the turns: local (default: the serving process) or
	// temporal (workflows on a Temporal cluster); see docs/temporal.md.
	Driver string `yaml:"driver"`
	// Temporal is the cluster of driver: temporal.
	Temporal *TemporalConfig `yaml:"temporal"`
	// Retention deletes finished sessions once they are this old; see
	// docs/operations.md.
	Retention *RetentionConfig `yaml:"retention"`
	// Audit is how the runtime signs checkpoints of the sessions' logs;
	// see docs/audit.md.
	Audit *AuditConfig `yaml:"audit"`
	// Approvals is who decides approval requests from callers' own code
	// (POST /v1/approvals, agent approvals); see docs/gateway.md.
	Approvals *ApprovalsConfig `yaml:"approvals"`
	// Gateway offers the tools of mcp_servers to any MCP client under
	// Cairn's approval policies (cairn gateway, /mcp/gateway); see
	// docs/gateway.md.
	Gateway *GatewayConfig `yaml:"gateway"`
	// A2A serves agents over the Agent2Agent protocol; see docs/a2a.md.
	A2A *A2AConfig `yaml:"a2a"`
}

// A2AConfig is the a2a section.
type A2AConfig struct {
	// Agents are served at /a2a/{agent}, each with its agent card.
	Agents []string `yaml:"agents"`
}

// GatewayConfig is the gateway section.
type GatewayConfig struct {
	// Servers name mcp_servers whose tools are offered (server__tool).
	Servers []string `yaml:"servers"`
	// Hold is how long a tools/call waits for a person before it answers
	// that the call is still pending (default 10m).
	Hold string `yaml:"hold"`
	// Sessions: approvals (default: a call that needs nobody's approval
	// passes straight through) or all (every call is a session).
	Sessions string `yaml:"sessions"`
	// Approvers, Escalation and OnExpiry apply to the calls of tools that
	// have none of their own under tools:.
	Approvers  *ApproversConfig       `yaml:"approvers"`
	Escalation []EscalationStepConfig `yaml:"escalation"`
	OnExpiry   *OnExpiryConfig        `yaml:"on_expiry"`
}

// ApprovalsConfig is the approvals section: the approvers and escalation
// of the approvals agent, whose calls are its callers' own functions.
type ApprovalsConfig struct {
	Approvers  *ApproversConfig       `yaml:"approvers"`
	Escalation []EscalationStepConfig `yaml:"escalation"`
	OnExpiry   *OnExpiryConfig        `yaml:"on_expiry"`
}

// AuditConfig is the audit section: the key that signs checkpoints and
// the older keys verifications still trust.
type AuditConfig struct {
	// Sign: false signs no checkpoints (default: sign, but for a memory
	// store, whose log nobody can edit and which a restart loses).
	Sign *bool `yaml:"sign"`
	// SigningKeyEnv names the variable holding the Ed25519 private key
	// (PEM or base64); without it the store keeps a key it generated.
	SigningKeyEnv string `yaml:"signing_key_env"`
	// KeyID names the signing key in each checkpoint (default: its
	// fingerprint, audit.KeyID).
	KeyID string `yaml:"key_id"`
	// PublicKeys are older keys (id → public key, PEM or base64) that
	// `cairn audit verify` still trusts after a rotation.
	PublicKeys map[string]string `yaml:"public_keys"`
	// CheckpointEvery is how many events a running turn records between
	// checkpoints (default 100).
	CheckpointEvery int `yaml:"checkpoint_every"`
}

// RetentionConfig is how long finished sessions are kept, per final
// status (a duration: 720h, or days: 30d; empty keeps them), and how often
// the server looks (sweep, default 1m).
type RetentionConfig struct {
	Completed string `yaml:"completed"`
	Failed    string `yaml:"failed"`
	Cancelled string `yaml:"cancelled"`
	Sweep     string `yaml:"sweep"`
	// Tombstones is how long a purged session's tombstone is kept (see
	// cairn.RunnerOptions.TombstoneRetention); default 365d.
	Tombstones string `yaml:"tombstones"`
}

// TemporalConfig is how to reach a Temporal cluster.
type TemporalConfig struct {
	HostPort  string `yaml:"host_port"`  // default 127.0.0.1:7233
	Namespace string `yaml:"namespace"`  // default "default"
	TaskQueue string `yaml:"task_queue"` // default "cairn"
	// TLS: client certificate and key files, the CA that signed the
	// server's certificate, and the name to check it against (all optional).
	TLS *TemporalTLSConfig `yaml:"tls"`
	// APIKeyEnv names the variable holding a Temporal Cloud API key.
	APIKeyEnv string `yaml:"api_key_env"`
	// Heartbeat is how soon a worker that died mid-call is noticed
	// (default 10s): its tool calls then become in-doubt approvals.
	Heartbeat string `yaml:"heartbeat"`
	// MaxHistory is how many history events a session's workflow run may
	// reach before it continues as new from a snapshot, once it waits for
	// a person (default 10000).
	MaxHistory int `yaml:"max_history"`
}

// TemporalTLSConfig is the TLS of the connection to Temporal.
type TemporalTLSConfig struct {
	CertFile   string `yaml:"cert_file"`
	KeyFile    string `yaml:"key_file"`
	CAFile     string `yaml:"ca_file"`
	ServerName string `yaml:"server_name"`
}

// WebhookConfig is one webhook endpoint.
type WebhookConfig struct {
	// Name identifies it in the outbox and the audit trail (default: url).
	Name string `yaml:"name"`
	URL  string `yaml:"url"`
	// SecretEnv names the environment variable holding the signing secret
	// (whsec_ followed by base64).
	SecretEnv string `yaml:"secret_env"`
	// Events it hears (default: all).
	Events []webhook.EventType `yaml:"events"`
	// Timeout bounds one delivery attempt (default 10s).
	Timeout string `yaml:"timeout"`
	// Groups are the approver groups the receiver speaks for (its action
	// links decide as a member of them).
	Groups []string `yaml:"groups"`
	// Tenant is the tenant whose sessions it hears (default: the default
	// tenant); "*" hears every tenant's.
	Tenant string `yaml:"tenant"`
	// Person names the auth token of the one person the receiver's links
	// are issued to (a personal inbox): they decide as that person, with
	// their groups and tenant.
	Person string `yaml:"person"`
}

// MCPServerConfig is one MCP server: a command speaking MCP on stdio, or
// the URL of a streamable HTTP endpoint. ${VAR} in env and headers values
// is replaced by the environment variable.
type MCPServerConfig struct {
	Command []string          `yaml:"command"`
	Env     map[string]string `yaml:"env"`
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
}

// AuthConfig lists the bearer tokens the server accepts.
type AuthConfig struct {
	Tokens []TokenConfig `yaml:"tokens"`
	// AdminOverride lets an admin decide outside an interrupt's approvers
	// (recorded as an override); off by default.
	AdminOverride bool `yaml:"admin_override"`
	// OIDC accepts bearer JWTs of an OpenID Provider.
	OIDC *OIDCConfig `yaml:"oidc"`
}

// OIDCConfig is auth.oidc: an OpenID Provider whose JWTs are accepted.
type OIDCConfig struct {
	Issuer   string `yaml:"issuer"`
	Audience string `yaml:"audience"`
	ClientID string `yaml:"client_id"`
	// ClientSecretEnv names the variable with the client's secret (for the
	// page's sign-in; public clients use PKCE alone).
	ClientSecretEnv string              `yaml:"client_secret_env"`
	Claims          OIDCClaims          `yaml:"claims"`
	Roles           map[string][]string `yaml:"roles"`
	ClockSkew       string              `yaml:"clock_skew"`
}

// OIDCClaims names the claims of a person's name, groups and tenant.
type OIDCClaims struct {
	Name   string `yaml:"name"`
	Groups string `yaml:"groups"`
	Tenant string `yaml:"tenant"`
}

// TokenConfig is one bearer token, read from an environment variable.
type TokenConfig struct {
	Name     string `yaml:"name"`
	TokenEnv string `yaml:"token_env"`
	Role     string `yaml:"role"`
	// Subject is the person the token is (default: its name): tokens of
	// one subject are one person (an approval counts once).
	Subject string   `yaml:"subject"`
	Groups  []string `yaml:"groups"`
	// Tenant is the tenant the holder acts in (default: the default
	// tenant); "*" makes the holder global: they see and decide the
	// sessions of every tenant.
	Tenant string `yaml:"tenant"`
}

// ApproversConfig says who may approve a tool's calls.
type ApproversConfig struct {
	Groups       []string `yaml:"groups"`
	Count        int      `yaml:"count"`
	NotRequester bool     `yaml:"not_requester"`
}

// ApprovalRuleConfig gives the calls for which If (CEL over args) holds
// their own approvers.
type ApprovalRuleConfig struct {
	If              string `yaml:"if"`
	ApproversConfig `yaml:",inline"`
	// Escalation and OnExpiry, when set, replace the tool's for the calls
	// the rule gives.
	Escalation []EscalationStepConfig `yaml:"escalation"`
	OnExpiry   *OnExpiryConfig        `yaml:"on_expiry"`
}

// ModelConfig is one entry of models.
type ModelConfig struct {
	Provider  string `yaml:"provider"`
	Model     string `yaml:"model"`
	BaseURL   string `yaml:"base_url"`
	APIKeyEnv string `yaml:"api_key_env"`
	// Stream selects the streaming API (text deltas reach event subscribers).
	Stream bool `yaml:"stream"`
	// MaxRetries bounds retries of 429, 5xx and connection errors (nil: 3).
	MaxRetries *int `yaml:"max_retries"`
	// MaxTokens bounds each response (anthropic; default 4096).
	MaxTokens int64 `yaml:"max_tokens"`
	// Thinking turns on extended thinking (anthropic): its blocks are
	// kept across pauses and sent back with the tool results.
	Thinking *ThinkingConfig `yaml:"thinking"`
	// Reasoning sets a reasoning model's effort (openai-responses).
	Reasoning *ReasoningConfig `yaml:"reasoning"`
	// Vertex runs a gemini model on Vertex AI instead of the Gemini API.
	Vertex *VertexConfig `yaml:"vertex"`
	// Store lets the provider keep responses (openai-responses; default
	// false: the reasoning comes back encrypted and Cairn keeps it).
	Store *bool `yaml:"store"`
	// SDK builds requests and reads replies with the official SDK's own
	// types instead of Cairn's lean path (openai, openai-responses): the
	// reference, slower.
	SDK bool `yaml:"sdk"`
	// Timeout bounds a whole call, retries included (default 10m).
	Timeout string `yaml:"timeout"`
	// IdleTimeout ends an attempt silent for so long (default 60s).
	IdleTimeout string `yaml:"idle_timeout"`
	// MaxReplyBytes bounds a reply: 8MiB (default), 512KiB, 1000000.
	MaxReplyBytes string `yaml:"max_reply_bytes"`
	// Script is the scripted provider's replies, played again at every
	// user message.
	Script []ScriptReply `yaml:"script"`
	// Scripts are the scripted provider's per-agent scripts, which go on
	// across the user's messages (a text reply ends a turn).
	Scripts map[string][]ScriptReply `yaml:"scripts"`
}

// ThinkingConfig is a model's thinking setting.
type ThinkingConfig struct {
	// BudgetTokens is how many tokens the model may think with (at least
	// 1024, less than max_tokens).
	BudgetTokens int64 `yaml:"budget_tokens"`
}

// VertexConfig places a gemini model on Vertex AI (Application Default
// Credentials).
type VertexConfig struct {
	Project  string `yaml:"project"`
	Location string `yaml:"location"`
}

// ReasoningConfig is a reasoning model's setting.
type ReasoningConfig struct {
	// Effort is minimal, low, medium or high.
	Effort string `yaml:"effort"`
}

// ScriptReply is one reply of a scripted model.
type ScriptReply struct {
	Text      string       `yaml:"text"`
	ToolCalls []ScriptCall `yaml:"tool_calls"`
}

// ScriptCall is one tool call of a scripted reply.
type ScriptCall struct {
	ID        string `yaml:"id"`
	Name      string `yaml:"name"`
	Arguments any    `yaml:"arguments"`
}

// ToolConfig is one entry of tools.
// SuggestionsConfig is the suggestions section (cairn.SuggestionPolicy).
type SuggestionsConfig struct {
	MinApprovals int  `yaml:"min_approvals"`
	MinPeople    int  `yaml:"min_people"`
	Off          bool `yaml:"off"`
}

// StandingRulesConfig is a tool's standing_rules: whether people may
// grant standing rules for its calls, and for how long at most (a
// duration like 72h or 30d, or unbounded; default 30d).
type StandingRulesConfig struct {
	Allow       *bool  `yaml:"allow"`
	MaxDuration string `yaml:"max_duration"`
}

type ToolConfig struct {
	Description  string         `yaml:"description"`
	Parameters   map[string]any `yaml:"parameters"`
	Command      []string       `yaml:"command"`
	Timeout      string         `yaml:"timeout"`
	Approval     string         `yaml:"approval"`
	Confirmation string         `yaml:"confirmation"`
	ApprovalTTL  string         `yaml:"approval_ttl"`
	Idempotent   bool           `yaml:"idempotent"`
	Builtin      string         `yaml:"builtin"`
	// Kind is empty for a tool Cairn runs, or client for one the caller
	// runs (no command): its calls wait for the caller's result.
	Kind string `yaml:"kind"`
	// ResultSchema is the JSON Schema of a result that arrives later (a
	// client tool's, or a waiting command's), checked before it is taken.
	ResultSchema map[string]any `yaml:"result_schema"`
	// Wait makes a command tool's work finish later: the command gets
	// CAIRN_CALLBACK_URL, its exit (0) means "started" and its stdout is
	// shown while the call waits; the result arrives at the URL.
	Wait *WaitConfig `yaml:"wait"`
	// Approvers and ApprovalRules say who may approve its calls.
	Approvers *ApproversConfig `yaml:"approvers"`
	// StandingRules allows (the default) or forbids standing rules for
	// the tool, and bounds how long one lasts.
	StandingRules *StandingRulesConfig `yaml:"standing_rules"`
	ApprovalRules []ApprovalRuleConfig `yaml:"approval_rules"`
	// Escalation reminds and escalates while a call's approval (or wait)
	// is undecided; OnExpiry is what happens at the approval's deadline
	// (docs/escalation.md).
	Escalation []EscalationStepConfig `yaml:"escalation"`
	OnExpiry   *OnExpiryConfig        `yaml:"on_expiry"`
	// Preview is the dry run a person approving a call sees beside its
	// arguments (docs/previews.md).
	Preview *PreviewConfig `yaml:"preview"`
}

// PreviewConfig is a tool's dry run, computed before the session pauses
// on a call's approval: a command (run as a command tool is, with the
// arguments on stdin and CAIRN_PREVIEW=1; its stdout is the preview) or
// an MCP server's tool (mcp: SERVER.TOOL, called with the arguments). It
// must be free of side effects.
type PreviewConfig struct {
	Command []string `yaml:"command"`
	MCP     string   `yaml:"mcp"`
	// Timeout bounds one run (default 10s); one that fails or times out
	// is shown as its error and never blocks the decision.
	Timeout string `yaml:"timeout"`
	// Format is text (default), diff or json.
	Format string `yaml:"format"`
}

// EscalationStepConfig is one step of escalation: after a duration since
// the approval was asked, or before_expiry its deadline; remind, and/or
// escalate_to groups (added, or with hand_over: true instead of the
// approvers' groups).
type EscalationStepConfig struct {
	After        string   `yaml:"after"`
	BeforeExpiry string   `yaml:"before_expiry"`
	Remind       bool     `yaml:"remind"`
	EscalateTo   []string `yaml:"escalate_to"`
	HandOver     bool     `yaml:"hand_over"`
}

// OnExpiryConfig is the outcome at an approval's deadline: action reject
// (with reason), approve (if the CEL condition over args holds; else
// reject with reason), fail, or ask (question).
type OnExpiryConfig struct {
	Action   string `yaml:"action"`
	Reason   string `yaml:"reason"`
	If       string `yaml:"if"`
	Question string `yaml:"question"`
}

// WaitConfig is a tool's wait: its deadline and what happens then.
type WaitConfig struct {
	// Timeout is a duration (30m); empty: no deadline.
	Timeout string `yaml:"timeout"`
	// OnTimeout is error (default), retry or ask.
	OnTimeout string `yaml:"on_timeout"`
	// Retries bounds on_timeout: retry (default 2).
	Retries int `yaml:"retries"`
}

// AgentConfig is one entry of agents.
type AgentConfig struct {
	// Approvers approve the calls of its tools that name none.
	Approvers *ApproversConfig `yaml:"approvers"`
	// Escalation and OnExpiry apply to the approvals of its tools that
	// have none of their own (a before_expiry step and on_expiry only to
	// those with an approval_ttl).
	Escalation    []EscalationStepConfig `yaml:"escalation"`
	OnExpiry      *OnExpiryConfig        `yaml:"on_expiry"`
	Model         string                 `yaml:"model"`
	Instructions  string                 `yaml:"instructions"`
	Tools         []string               `yaml:"tools"`
	Subagents     []SubagentConfig       `yaml:"subagents"`
	Handoffs      []HandoffConfig        `yaml:"handoffs"`
	MaxIterations int                    `yaml:"max_iterations"`
	// OutputSchema is the JSON Schema of the agent's final answer: the
	// answer is JSON matching it (sent back to the model until it is).
	OutputSchema map[string]any `yaml:"output_schema"`
	// Review says when the final answer waits for a person: never
	// (default), always, or a CEL expression over output.
	Review string `yaml:"review"`
	// FrontendTools: false refuses tools a client declares with its
	// message (AG-UI frontend tools); default true.
	FrontendTools *bool `yaml:"frontend_tools"`
	// OnNewVersion says what a session paused under an earlier definition
	// of the agent does after the configuration changed: pin (default)
	// resumes it under its own, latest under the new one, recording a
	// definition_changed event (cairn.Agent.OnNewVersion).
	OnNewVersion string `yaml:"on_new_version"`
	// A2A makes the agent a remote one, reached over the Agent2Agent
	// protocol (no model, no tools here): other agents call it as a
	// sub-agent; see docs/a2a.md.
	A2A *RemoteAgentConfig `yaml:"a2a"`
	// Description, of a remote agent, tells the models that call it what
	// it does (default: its agent card's).
	Description string `yaml:"description"`
}

// RemoteAgentConfig is a remote agent's a2a key.
type RemoteAgentConfig struct {
	// URL is the agent's base URL; its card is at URL +
	// /.well-known/agent-card.json.
	URL string `yaml:"url"`
	// Headers go with every request; ${VAR} is taken from the environment.
	Headers map[string]string `yaml:"headers"`
}

// HandoffConfig lets an agent hand the conversation over to another agent:
// its name alone (handoffs: [billing]) or {agent, approval, confirmation}
// to have a person confirm the transfer.
type HandoffConfig struct {
	Agent        string `yaml:"agent"`
	Approval     string `yaml:"approval"`
	Confirmation string `yaml:"confirmation"`
}

// UnmarshalYAML accepts the agent's name as a plain string.
func (h *HandoffConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&h.Agent)
	}
	if n.Kind == yaml.MappingNode {
		known := yamlFields(reflect.TypeFor[HandoffConfig]())
		for i := 0; i < len(n.Content); i += 2 {
			if _, ok := known[n.Content[i].Value]; !ok {
				return fmt.Errorf("line %d: unknown field %q", n.Content[i].Line, n.Content[i].Value) // explained by explain
			}
		}
	}
	type plain HandoffConfig
	return n.Decode((*plain)(h))
}

// SubagentConfig offers another agent to an agent as a tool.
type SubagentConfig struct {
	Agent        string `yaml:"agent"`
	Tool         string `yaml:"tool"`
	Description  string `yaml:"description"`
	Mode         string `yaml:"mode"` // tool (default) | interactive
	Approval     string `yaml:"approval"`
	Confirmation string `yaml:"confirmation"`
}
