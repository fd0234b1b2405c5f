package cairn

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/local"
	"github.com/cairnhq/cairn/internal/schema"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// Tool is something an agent can call. Build one from a typed Go function with
// NewTool (which fills in Parameters and Handler), offer another agent with
// AgentTool, InteractiveAgentTool or Handoff, or fill in every field for a
// tool whose arguments are raw JSON.
type Tool struct {
	// Name is what the model calls the tool.
	Name string
	// Description tells the model what the tool does.
	Description string
	// Parameters is the JSON Schema of the arguments. Arguments that do not
	// match it never reach Handler; the model gets the validation error.
	Parameters json.RawMessage
	// Handler runs the tool with the validated argument JSON. Its result is
	// what the model sees. An error becomes an error result the model sees.
	Handler func(ctx context.Context, args json.RawMessage) (string, error)
	// Approval decides whether a call waits for a person, and says when in
	// words: Always(), ApprovalIf(pred), PolicyFunc(rule, fn); the zero
	// Policy never asks.
	Approval Policy
	// Approvers says who may approve its calls: groups one of which an
	// approver must be in, how many distinct people (four-eyes: Count 2),
	// and whether the person who asked for the call may not
	// (NotRequester). Nil: the agent's Approvers, or any approver.
	Approvers *Approvers
	// ApprovalRules give calls whose arguments match other approvers: the
	// first rule whose If holds wins over Approvers ("a refund over 1,000
	// needs two finance leads"). A rule whose If fails holds (fail closed).
	ApprovalRules []ApprovalRule
	// Confirmation is a text/template over the decoded arguments, shown to
	// the approver: "Delete file '{{.filename}}'? This cannot be undone."
	Confirmation string
	// Runs says what approving a call runs, in words for the approver ("the
	// command ./deploy.sh", "refunds through the billing API"): the web
	// page shows it with each approval, and GET /v1/agents lists it.
	// Optional; the configuration file fills it in for commands, built-ins
	// and MCP tools.
	Runs string
	// Timeout bounds one run of Handler; 0 means no limit beyond the turn's context.
	Timeout time.Duration
	// Preview is the tool's dry run: what a call with these arguments
	// would do (a diff, a terraform plan, the rows a DELETE would touch),
	// computed before the session pauses on the call's approval, stored
	// with the interrupt and shown beside its arguments at every door
	// (docs/previews.md). It must be free of side effects. An error, a
	// panic or running past PreviewTimeout is shown as the preview's
	// error: it never blocks the decision. Only for a tool whose Approval
	// may ask. TextPreview and JSONPreview build its result.
	Preview func(ctx context.Context, args json.RawMessage) (Preview, error)
	// PreviewTimeout bounds one run of Preview; 0 means 10 seconds.
	PreviewTimeout time.Duration
	// Idempotent marks a tool that is safe to run twice with the same
	// idempotency key (see IdempotencyKey).
	Idempotent bool
	// ApprovalTTL, when positive, is how long an approval request waits: an
	// undecided one past it gets its Escalation's OnExpiry (by default it
	// counts as rejected with the reason "approval expired"), and the
	// session goes on without a person.
	ApprovalTTL time.Duration
	// StandingRules bounds the standing rules people may grant for the
	// tool's calls (docs/rules.md): the zero value allows rules of up to
	// 30 days.
	StandingRules StandingRules
	// Escalation says when an undecided approval (or external wait)
	// reminds and escalates to other groups, and what happens at its
	// deadline: reject with a reason, approve if a condition holds, fail
	// the session, or ask again (docs/escalation.md). Nil: nothing, and
	// an expired approval is rejected.
	Escalation *Escalation
	// Wait, for a tool whose Handler returns Pending (its work finishes
	// later), is the deadline of that wait and its outcome; nil: the call
	// waits with no deadline.
	Wait *Wait
	// ResultSchema, for a tool whose result arrives later (Pending, or a
	// ClientTool), is the JSON Schema a completion's output must match;
	// one that does not is refused (ErrInvalidOutput, naming the field).
	ResultSchema json.RawMessage

	// Set by AgentTool, InteractiveAgentTool and Handoff, whose Handler is nil.
	kind   engine.ToolKind
	target string
	mode   Mode
}

// ApprovalRule gives the calls for which If holds their own approvers
// (Tool.ApprovalRules).
type ApprovalRule struct {
	// If is a policy over the call's arguments: ApprovalIf, PolicyFunc
	// (the configuration's CEL rules are PolicyFuncs).
	If Policy
	Approvers
	// Escalation, when set, replaces the tool's for the calls the rule
	// gives.
	Escalation *Escalation
}

var agentToolSchema = json.RawMessage(`{"type":"object","properties":{"input":{"type":"string","description":"the task or message for the agent"}},"required":["input"]}`)

// AgentTool offers agent as a tool: a call {"input": "…"} runs the agent in
// a child frame that starts with that input as its user message and runs to
// completion; its final text is the result. Anything inside that pauses the
// session shows in the interrupt's path. spec sets the tool's Name
// (default: the agent's name), Description and approval settings as for any
// tool (Approval asks before the child starts); it may be nil.
func AgentTool(agent string, spec *Tool) *Tool {
	return subAgentTool(agent, spec, engine.ToolAgent, session.ModeTool)
}

// InteractiveAgentTool offers agent as a tool that takes over the
// conversation: its text goes to the user (the session pauses with a
// message interrupt), the user's messages go to it, and it ends by calling
// the tool "complete" with its result, which answers the call. spec is as
// for AgentTool.
func InteractiveAgentTool(agent string, spec *Tool) *Tool {
	return subAgentTool(agent, spec, engine.ToolAgent, session.ModeInteractive)
}

// Handoff offers the tool transfer_to_<agent>: calling it replaces the
// current agent by agent, which keeps the conversation and answers whoever
// the current agent was answering. spec may rename it, describe it or make
// the transfer wait for approval (Approval, Confirmation); it may be nil.
func Handoff(agent string, spec *Tool) *Tool {
	t := subAgentTool(agent, spec, engine.ToolHandoff, "")
	if spec == nil || spec.Name == "" {
		t.Name = "transfer_to_" + agent
	}
	if spec == nil || spec.Description == "" {
		t.Description = fmt.Sprintf("Hand the conversation over to the %s agent.", agent)
	}
	if !t.Approval.IsNever() && t.Confirmation == "" {
		t.Confirmation = fmt.Sprintf("Hand the conversation over to the %s agent?", agent)
	}
	t.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
	return t
}

func subAgentTool(agent string, spec *Tool, kind engine.ToolKind, mode Mode) *Tool {
	t := &Tool{}
	if spec != nil {
		*t = *spec
	}
	if t.Name == "" {
		t.Name = agent
	}
	if t.Description == "" {
		t.Description = fmt.Sprintf("Ask the %s agent.", agent)
	}
	t.Parameters, t.Handler = agentToolSchema, nil
	t.kind, t.target, t.mode = kind, agent, mode
	return t
}

// StandingRules bounds the standing rules of a tool (Tool.StandingRules).
type StandingRules struct {
	// Forbidden: no standing rule may be granted for the tool, and none
	// decides its calls.
	Forbidden bool
	// MaxDuration is the longest a rule may last; 0: 30 days.
	MaxDuration time.Duration
	// Unbounded allows rules that never expire (duration "unbounded").
	Unbounded bool
}

// NewTool builds a tool from a typed function: spec gives its Name,
// Description and settings (Approval, Confirmation, Timeout, Idempotent,
// ApprovalTTL), and NewTool adds the Handler and, unless spec sets them, the
// Parameters: the JSON Schema of Args, generated from the struct (field
// names from `json` tags, descriptions from `jsonschema` tags, allowed
// values from `enum` tags, comma-separated; fields without omitempty are
// required):
//
//	type deployArgs struct {
//		Env    string `json:"env" jsonschema:"where to deploy" enum:"staging,production"`
//		DryRun bool   `json:"dry_run,omitempty"`
//	}
//	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy the build.",
//		Approval: cairn.Always(), Confirmation: "Deploy to {{.env}}?"},
//		func(ctx context.Context, a deployArgs) (string, error) { … })
//
// A Result that is a string is given to the model as is; anything else is
// marshalled to JSON. NewTool does not modify spec.
func NewTool[Args, Result any](spec *Tool, fn func(ctx context.Context, args Args) (Result, error)) *Tool {
	t := &Tool{}
	if spec != nil {
		*t = *spec
	}
	name := t.Name
	if t.Parameters == nil {
		doc, err := jsonschema.For[Args](nil)
		if err == nil {
			addEnums(doc, reflect.TypeFor[Args]())
			t.Parameters, err = json.Marshal(doc)
		}
		if err != nil {
			// Reported by NewRunner, which validates every tool.
			t.Parameters = nil
			t.Handler = func(context.Context, json.RawMessage) (string, error) {
				return "", fmt.Errorf("tool %q has no schema: %w", name, err)
			}
			return t
		}
	}
	t.Handler = func(ctx context.Context, raw json.RawMessage) (string, error) {
		var a Args
		if err := json.Unmarshal(raw, &a); err != nil {
			return "", fmt.Errorf("decode arguments: %w", err)
		}
		res, err := fn(ctx, a)
		if err != nil {
			return "", err
		}
		if s, ok := any(res).(string); ok {
			return s, nil
		}
		b, err := json.Marshal(res)
		if err != nil {
			return "", fmt.Errorf("encode result: %w", err)
		}
		return string(b), nil
	}
	return t
}

// AskUser is a tool, named name, with the arguments {"question": string}:
// it pauses the session with an input interrupt and returns the user's
// answer (see Ask). The configuration file's `builtin: ask_user`.
func AskUser(name string) *Tool {
	return NewTool(&Tool{Name: name, Description: "Ask the user a question and wait for the answer."}, func(ctx context.Context, a struct {
		Question string `json:"question" jsonschema:"the question for the user"`
	}) (string, error) {
		return Ask(ctx, a.Question)
	})
}

// addEnums copies `enum:"a,b"` struct tags into the schema, recursively.
func addEnums(s *jsonschema.Schema, t reflect.Type) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
		if s.Items != nil {
			s = s.Items
		}
	}
	if t.Kind() != reflect.Struct || s == nil {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		prop := s.Properties[name]
		if prop == nil {
			continue
		}
		if enum := f.Tag.Get("enum"); enum != "" {
			for _, v := range strings.Split(enum, ",") {
				prop.Enum = append(prop.Enum, strings.TrimSpace(v))
			}
		}
		addEnums(prop, f.Type)
	}
}

// IdempotencyKey returns the key of the tool call running with ctx: unique to
// the call within its session and the same if the call is ever run again.
// Pass it to downstream systems that deduplicate (payment APIs, for one).
func IdempotencyKey(ctx context.Context) string {
	if c := local.CallFrom(ctx); c != nil {
		return c.Key
	}
	return ""
}

// compile checks t and prepares it once, for the runtime: its schema and
// confirmation template compiled, its description for GET /v1/agents.
func (t *Tool) compile() (*local.Tool, error) {
	if t == nil || t.Name == "" {
		return nil, fmt.Errorf("a tool has no name")
	}
	if t.Handler == nil && t.kind == engine.ToolFunction {
		return nil, fmt.Errorf("tool %q: Handler is nil (a tool the caller runs is declared with ClientTool)", t.Name)
	}
	params := t.Parameters
	if len(params) == 0 {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	args, err := schema.Compile(params)
	if err != nil {
		return nil, fmt.Errorf("tool %q: parameters: %w", t.Name, err)
	}
	et := &engine.Tool{
		Definition:  model.ToolDefinition{Name: t.Name, Description: t.Description, Parameters: params},
		Idempotent:  t.Idempotent,
		ApprovalTTL: t.ApprovalTTL,
		Rules:       engine.RulePolicy(t.StandingRules),
		Kind:        t.kind,
		Target:      t.target,
		Mode:        t.mode,
		Validate:    func(v any) error { return schema.Validate(args, v) },
		Accepts:     schema.Quick(params),
	}
	if len(t.ResultSchema) > 0 {
		result, err := schema.Compile(t.ResultSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: result schema: %w", t.Name, err)
		}
		et.ResultSchema = t.ResultSchema
		et.CheckResult = func(v any) error { return schema.Validate(result, v) }
	}
	if w := t.Wait; w != nil {
		if w.Timeout < 0 || w.Retries < 0 {
			return nil, fmt.Errorf("tool %q: Wait.Timeout and Wait.Retries cannot be negative", t.Name)
		}
		switch w.OnTimeout {
		case "", OnTimeoutError, OnTimeoutRetry, OnTimeoutAsk:
		default:
			return nil, fmt.Errorf("tool %q: Wait.OnTimeout %q is not one of error, retry, ask", t.Name, w.OnTimeout)
		}
		et.Wait = &engine.Wait{Timeout: w.Timeout, OnTimeout: w.OnTimeout, Retries: w.Retries}
	}
	if policy := t.Approval; !policy.IsNever() {
		et.NeedsApproval = func(a engine.ToolArgs) (bool, error) { return policy.Asks(a.Raw) }
	}
	if t.Approvers != nil || len(t.ApprovalRules) > 0 {
		if t.Approval.IsNever() {
			return nil, fmt.Errorf("tool %q: Approvers and ApprovalRules say who approves its calls, but its Approval never asks: set Approval (Always(), ApprovalIf)", t.Name)
		}
		if err := checkApprovers(t.Approvers); err != nil {
			return nil, fmt.Errorf("tool %q: Approvers: %w", t.Name, err)
		}
		for i := range t.ApprovalRules {
			if err := checkApprovers(&t.ApprovalRules[i].Approvers); err != nil {
				return nil, fmt.Errorf("tool %q: ApprovalRules[%d]: %w", t.Name, i, err)
			}
		}
		et.Approvers = approversOf(t.Approvers, t.ApprovalRules)
	}
	hasRuleEscalation := slices.ContainsFunc(t.ApprovalRules, func(r ApprovalRule) bool { return r.Escalation != nil })
	if t.Escalation != nil || hasRuleEscalation {
		if t.Approval.IsNever() && t.Wait == nil {
			return nil, fmt.Errorf("tool %q: Escalation reminds about approvals and waits, but its calls neither ask (set Approval) nor wait (set Wait)", t.Name)
		}
		if err := t.Escalation.check(); err != nil {
			return nil, fmt.Errorf("tool %q: Escalation: %w", t.Name, err)
		}
		for i := range t.ApprovalRules {
			if err := t.ApprovalRules[i].Escalation.check(); err != nil {
				return nil, fmt.Errorf("tool %q: ApprovalRules[%d].Escalation: %w", t.Name, i, err)
			}
		}
		et.Escalation = escalationOf("tool "+t.Name+" ", t.Escalation, t.ApprovalRules)
	}
	if t.Confirmation != "" {
		tmpl, err := template.New(t.Name).Option("missingkey=zero").Parse(t.Confirmation)
		if err != nil {
			return nil, fmt.Errorf("tool %q: confirmation template: %w", t.Name, err)
		}
		et.Confirm = func(a engine.ToolArgs) (string, error) {
			var b strings.Builder
			if err := tmpl.Execute(&b, a.Value); err != nil {
				return "", err
			}
			return strings.ReplaceAll(b.String(), "<no value>", ""), nil
		}
	}
	if t.Preview != nil {
		if t.Approval.IsNever() {
			return nil, fmt.Errorf("tool %q: Preview is shown to the person approving a call, but its Approval never asks: set Approval (Always(), ApprovalIf)", t.Name)
		}
		if t.PreviewTimeout < 0 {
			return nil, fmt.Errorf("tool %q: PreviewTimeout cannot be negative", t.Name)
		}
		et.Preview = true
	}
	spec, err := t.spec(params)
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	return &local.Tool{Engine: et, Handler: t.Handler, Timeout: t.Timeout, Info: t.info(params),
		Preview: t.Preview, PreviewTimeout: t.PreviewTimeout, Spec: spec}, nil
}

// checkApprovers refuses approvers that no one could satisfy.
func checkApprovers(a *Approvers) error {
	if a == nil {
		return nil
	}
	if a.Count < 0 {
		return fmt.Errorf("the count %d is negative", a.Count)
	}
	for i, g := range a.Groups {
		if strings.TrimSpace(g) == "" {
			return fmt.Errorf("group %d of %d is empty", i+1, len(a.Groups))
		}
	}
	return nil
}

// approversOf is the engine's rule for who approves a call: the first of
// rules whose If holds (or fails: fail closed), else def.
func approversOf(def *Approvers, rules []ApprovalRule) func(engine.ToolArgs) (*Approvers, error) {
	rules = slices.Clone(rules)
	return func(a engine.ToolArgs) (*Approvers, error) {
		for i := range rules {
			if holds, err := rules[i].If.Asks(a.Raw); holds || err != nil {
				return &rules[i].Approvers, nil
			}
		}
		return def, nil
	}
}

// info describes the tool for clients (GET /v1/agents).
func (t *Tool) info(params json.RawMessage) ToolInfo {
	info := ToolInfo{Name: t.Name, Description: t.Description, Parameters: params, Kind: "function",
		Agent: t.target, Runs: t.Runs, Approval: t.Approval.Rule(), Confirmation: t.Confirmation, Idempotent: t.Idempotent}
	switch {
	case t.kind == engine.ToolHandoff:
		info.Kind = "handoff"
	case t.kind == engine.ToolAgent && t.mode == ModeInteractive:
		info.Kind = "interactive_agent"
	case t.kind == engine.ToolAgent:
		info.Kind = "agent"
	case t.kind == engine.ToolClient:
		info.Kind = "client"
	}
	info.ResultSchema = t.ResultSchema
	info.Approvers = t.Approvers
	for _, r := range t.ApprovalRules {
		info.ApprovalRules = append(info.ApprovalRules, ApprovalRuleInfo{Condition: r.If.Rule(), Approvers: r.Approvers})
	}
	if t.Wait != nil && t.Wait.Timeout > 0 {
		info.WaitTimeout = t.Wait.Timeout.String()
	}
	if t.ApprovalTTL > 0 {
		info.ApprovalTTL = t.ApprovalTTL.String()
	}
	if t.Timeout > 0 {
		info.Timeout = t.Timeout.String()
	}
	return info
}

// CheckSchema reports whether doc is a JSON Schema that Cairn can validate
// tool arguments with.
func CheckSchema(doc json.RawMessage) error {
	_, err := schema.Compile(doc)
	return err
}
