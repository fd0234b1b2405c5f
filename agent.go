package cairn

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cairnhq/cairn/internal/local"
	"github.com/cairnhq/cairn/internal/schema"
	"github.com/cairnhq/cairn/model"
)

// DefaultMaxIterations is an agent's limit of model calls per turn when
// Agent.MaxIterations is 0.
const DefaultMaxIterations = local.DefaultMaxIterations

// Agent is pure configuration: a name, instructions, a model and tools.
type Agent struct {
	Name         string
	Instructions string
	Model        model.Model
	Tools        []*Tool
	// Toolsets are sources of more tools that may change while the runner
	// runs, such as an MCP server's (mcptools.Hub.Toolset): the runner re-reads
	// them when they say they changed.
	Toolsets []Toolset
	// MaxIterations is the number of model calls allowed in one turn; the
	// next one fails the turn. 0 means DefaultMaxIterations.
	MaxIterations int
	// OutputSchema, when set, is the JSON Schema of the agent's final
	// answer (SchemaFor builds one from a Go type). The model is asked for
	// it the provider's way; an answer that is not JSON or does not match
	// is sent back to the model with why (an output_rejected event), up to
	// OutputRetries times (0 means 2), and then fails with invalid_output.
	// The session's OutputJSON holds the answer (OutputAs decodes it).
	OutputSchema  json.RawMessage
	OutputRetries int
	// Review says when a final answer that matches OutputSchema waits for a
	// person before it goes (an interrupt of kind review): Always(),
	// ApprovalIf over the answer's type, or a PolicyFunc over its JSON; the
	// zero Policy never asks. The person approves it, edits it (checked
	// against OutputSchema), or rejects it with a reason the model sees
	// before it answers again. A policy that fails asks.
	Review Policy
	// Approvers is who approves the calls of its tools that name no
	// Approvers of their own (see Tool.Approvers).
	Approvers *Approvers
	// Escalation reminds, escalates and decides at the deadline for the
	// approvals of its tools that have no Escalation of their own (see
	// Tool.Escalation); its unnamed rules are "agent NAME escalation[i]".
	Escalation *Escalation
	// Direct agents have no Model: a session of one makes the one call
	// its starter asks for (StartOptions.Call, RequestApproval, the MCP
	// gateway) under the tool's policies, as if a model had asked for
	// it, and its answer is the call's result. It takes no messages.
	Direct bool
	// CallerTools, on a direct agent, takes calls of tools it does not
	// list: each is a function its caller runs (like a ClientTool), that
	// always waits for approval under Approvers and Escalation, and then
	// for the caller's result (RecordCallResult). ApprovalsAgent is one.
	CallerTools bool
	// NoClientTools refuses tools a caller declares with its message
	// (StartOptions.ClientTools, TurnOptions.ClientTools: AG-UI frontend
	// tools); by default they are offered to the model for that message.
	NoClientTools bool
	// OnNewVersion says what a session does that started under another
	// definition of the agent than the one deployed now (its
	// instructions, tools and their schemas and approval policies, the
	// agents it reaches; Session.Definition): VersionPin ("", the
	// default) resumes it under its own, VersionLatest under the one
	// deployed now, recording a definition_changed event.
	OnNewVersion VersionPolicy
}

// VersionPolicy is Agent.OnNewVersion.
type VersionPolicy string

// Version policies (config: on_new_version).
const (
	VersionPin    VersionPolicy = "pin"
	VersionLatest VersionPolicy = "latest"
)

// SchemaFor returns the JSON Schema of T for Agent.OutputSchema, generated
// as NewTool generates a tool's: field names from `json` tags,
// descriptions from `jsonschema` tags, allowed values from `enum` tags.
func SchemaFor[T any]() (json.RawMessage, error) {
	doc, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, fmt.Errorf("cairn: the schema of %s: %w", reflect.TypeFor[T](), err)
	}
	addEnums(doc, reflect.TypeFor[T]())
	return json.Marshal(doc)
}

// OutputAs decodes the structured answer of a completed session (an agent
// with an OutputSchema) into a T.
func OutputAs[T any](s *Session) (T, error) {
	var v T
	if s == nil || s.OutputJSON == nil {
		return v, errors.New("cairn: the session has no structured output (it has not completed, or its agent has no OutputSchema)")
	}
	if err := json.Unmarshal(s.OutputJSON, &v); err != nil {
		return v, fmt.Errorf("cairn: the session's output does not decode into %s: %w", reflect.TypeFor[T](), err)
	}
	return v, nil
}

// Toolset is a source of tools that may change while a Runner runs, such
// as an MCP server's tools (which it announces with
// notifications/tools/list_changed). Add it to Agent.Toolsets.
type Toolset interface {
	// Tools returns the current tools. A tool a session already called
	// should stay listed (or its later calls fail with an error result).
	Tools() []*Tool
	// Notify registers fn to be called, on any goroutine, after Tools
	// changed.
	Notify(fn func())
}

// compile is the agent as the runtime takes it: its tools compiled when
// the runtime asks (at NewRunner, and again each time a toolset changes).
func (a *Agent) compile() (*local.Agent, error) {
	switch a.OnNewVersion {
	case "", VersionPin, VersionLatest:
	default:
		return nil, fmt.Errorf("cairn: agent %q: OnNewVersion %q is not %q or %q", a.Name, a.OnNewVersion, VersionPin, VersionLatest)
	}
	spec, err := a.spec()
	if err != nil {
		return nil, fmt.Errorf("cairn: agent %q: %w", a.Name, err)
	}
	ra := &local.Agent{Name: a.Name, Instructions: a.Instructions, Model: a.Model, MaxIterations: a.MaxIterations,
		OutputSchema: a.OutputSchema, OutputRetries: a.OutputRetries, Spec: spec, FollowLatest: a.OnNewVersion == VersionLatest,
		Tools: func() ([]*local.Tool, error) {
			all := a.Tools
			for _, ts := range a.Toolsets {
				all = append(all[:len(all):len(all)], ts.Tools()...)
			}
			out := make([]*local.Tool, 0, len(all))
			for _, t := range all {
				ct, err := t.compile()
				if err != nil {
					return nil, err
				}
				if a.Approvers != nil && ct.Engine.Approvers == nil && ct.Engine.NeedsApproval != nil {
					if err := checkApprovers(a.Approvers); err != nil {
						return nil, fmt.Errorf("cairn: agent %q: Approvers: %w", a.Name, err)
					}
					ct.Engine.Approvers = approversOf(a.Approvers, nil)
					ct.Info.Approvers = a.Approvers
				}
				if a.Escalation != nil && ct.Engine.Escalation == nil && ct.Engine.NeedsApproval != nil {
					if err := a.Escalation.check(); err != nil {
						return nil, fmt.Errorf("cairn: agent %q: Escalation: %w", a.Name, err)
					}
					ct.Engine.Escalation = escalationOf("agent "+a.Name+" ", a.Escalation, nil)
				}
				out = append(out, ct)
			}
			return out, nil
		}}
	if a.CallerTools {
		if !a.Direct {
			return nil, fmt.Errorf("cairn: agent %q: CallerTools needs a direct agent (Direct: true)", a.Name)
		}
		spec := &Tool{Name: "caller", Approval: Always(), Approvers: a.Approvers, Escalation: a.Escalation}
		ct, err := ClientTool(spec).compile()
		if err != nil {
			return nil, fmt.Errorf("cairn: agent %q: %w", a.Name, err)
		}
		ra.CallerTool = ct
	}
	ra.Direct, ra.NoClientTools = a.Direct, a.NoClientTools
	if len(a.Toolsets) > 0 {
		ra.Notify = func(fn func()) {
			for _, ts := range a.Toolsets {
				ts.Notify(fn)
			}
		}
	}
	if policy := a.Review; !policy.IsNever() {
		if a.OutputSchema == nil {
			return nil, fmt.Errorf("cairn: agent %q: Review needs an OutputSchema (a person reviews a structured answer)", a.Name)
		}
		ra.Review = policy.Asks
	}
	if a.OutputSchema != nil {
		out, err := schema.Compile(a.OutputSchema)
		if err != nil {
			return nil, fmt.Errorf("cairn: agent %q: output schema: %w", a.Name, err)
		}
		ra.CheckOutput = func(v any) error { return schema.Validate(out, v) }
	}
	return ra, nil
}
