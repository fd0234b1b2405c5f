package cairn

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/local"
)

// An agent's definition is what a session of it runs under: its
// instructions, limits and output schema, its tools with their schemas and
// approval policies, and the agents its tools reach. Each part is written
// here as data (agentSpec, toolSpec), hashed and stored by the runtime
// (local.Definition), and made again from that data for a session paused
// under a definition the deployment no longer has (rebuild). What is code
// — handlers, models, policies written in Go, escalations, previews — is
// not stored: a rebuilt definition takes it from the agents deployed now.

// agentSpec is an agent's part of its definition.
type agentSpec struct {
	Name          string          `json:"name"`
	Instructions  string          `json:"instructions,omitempty"`
	MaxIterations int             `json:"max_iterations,omitempty"`
	OutputSchema  json.RawMessage `json:"output_schema,omitempty"`
	OutputRetries int             `json:"output_retries,omitempty"`
	Review        *policySpec     `json:"review,omitempty"`
	Approvers     *Approvers      `json:"approvers,omitempty"`
	Direct        bool            `json:"direct,omitempty"`
	CallerTools   bool            `json:"caller_tools,omitempty"`
	NoClientTools bool            `json:"no_client_tools,omitempty"`
}

// toolSpec is a tool's part of its agent's definition.
type toolSpec struct {
	Name          string          `json:"name"`
	Description   string          `json:"description,omitempty"`
	Parameters    json.RawMessage `json:"parameters"`
	Kind          engine.ToolKind `json:"kind,omitempty"`
	Target        string          `json:"target,omitempty"`
	Mode          Mode            `json:"mode,omitempty"`
	Runs          string          `json:"runs,omitempty"`
	Approval      *policySpec     `json:"approval,omitempty"`
	Approvers     *Approvers      `json:"approvers,omitempty"`
	ApprovalRules []ruleSpec      `json:"approval_rules,omitempty"`
	Confirmation  string          `json:"confirmation,omitempty"`
	Idempotent    bool            `json:"idempotent,omitempty"`
	ApprovalTTL   time.Duration   `json:"approval_ttl_ns,omitempty"`
	StandingRules StandingRules   `json:"standing_rules,omitzero"`
	Wait          *Wait           `json:"wait,omitempty"`
	ResultSchema  json.RawMessage `json:"result_schema,omitempty"`
	Timeout       time.Duration   `json:"timeout_ns,omitempty"`
}

// ruleSpec is an ApprovalRule's part (its Escalation is not stored).
type ruleSpec struct {
	If        policySpec `json:"if"`
	Approvers Approvers  `json:"approvers"`
}

// policySpec is a Policy as data: its rule, and for a CEL policy the
// variable it is over (the rule is then its expression).
type policySpec struct {
	Rule string `json:"rule"`
	Over string `json:"over,omitempty"`
}

func specOf(p Policy) policySpec { return policySpec{Rule: p.Rule(), Over: p.over} }

// policySpecOf is p's spec, nil for a policy that never asks.
func policySpecOf(p Policy) *policySpec {
	if p.IsNever() {
		return nil
	}
	s := specOf(p)
	return &s
}

// policy makes s again: never, always and CEL from the data; a policy
// written in Go from deployed (the one deployed now under the same name),
// keeping the stored words; with none deployed, it asks every time (fail
// closed).
func (s *policySpec) policy(deployed Policy) (Policy, error) {
	switch {
	case s == nil:
		return Policy{}, nil
	case s.Over != "":
		return PolicyCEL(s.Over, s.Rule)
	case s.Rule == "always":
		return Always(), nil
	case s.Rule == "never":
		return Never(), nil
	case deployed.ask != nil:
		return Policy{rule: s.Rule, ask: deployed.ask}, nil
	}
	return Policy{rule: s.Rule, ask: always}, nil
}

// spec is the tool's part of its agent's definition, params its schema.
func (t *Tool) spec(params json.RawMessage) (json.RawMessage, error) {
	s := toolSpec{Name: t.Name, Description: t.Description, Parameters: params, Kind: t.kind, Target: t.target, Mode: t.mode,
		Runs: t.Runs, Approval: policySpecOf(t.Approval), Approvers: t.Approvers, Confirmation: t.Confirmation, Idempotent: t.Idempotent,
		ApprovalTTL: t.ApprovalTTL, StandingRules: t.StandingRules, Wait: t.Wait, ResultSchema: t.ResultSchema, Timeout: t.Timeout}
	for _, r := range t.ApprovalRules {
		s.ApprovalRules = append(s.ApprovalRules, ruleSpec{If: specOf(r.If), Approvers: r.Approvers})
	}
	return json.Marshal(s)
}

// spec is the agent's part of its definition.
func (a *Agent) spec() (json.RawMessage, error) {
	return json.Marshal(agentSpec{Name: a.Name, Instructions: a.Instructions, MaxIterations: a.MaxIterations,
		OutputSchema: a.OutputSchema, OutputRetries: a.OutputRetries, Review: policySpecOf(a.Review), Approvers: a.Approvers,
		Direct: a.Direct, CallerTools: a.CallerTools, NoClientTools: a.NoClientTools})
}

// apply puts the spec on a, a copy of the agent deployed now (its review
// policy, if written in Go, is kept under the stored words).
func (s *agentSpec) apply(a *Agent) error {
	review, err := s.Review.policy(a.Review)
	if err != nil {
		return fmt.Errorf("review: %w", err)
	}
	a.Name, a.Instructions, a.MaxIterations, a.OutputSchema, a.OutputRetries = s.Name, s.Instructions, s.MaxIterations, s.OutputSchema, s.OutputRetries
	a.Review, a.Approvers, a.Direct, a.CallerTools, a.NoClientTools = review, s.Approvers, s.Direct, s.CallerTools, s.NoClientTools
	return nil
}

// rebuilder makes the agents of stored definitions again beside deployed.
type rebuilder struct{ deployed map[string]*Agent }

// rebuild is local.Rebuild: each agent of def as def has it, with its
// model, handlers and Go policies from the agent deployed now. A tool the
// deployment no longer has is kept, so the model sees what it saw, and a
// call of it fails with an error the model reads.
func (b rebuilder) rebuild(def *local.Definition) ([]*local.Agent, error) {
	out := make([]*local.Agent, 0, len(def.Agents))
	for _, d := range def.Agents {
		var spec agentSpec
		if err := json.Unmarshal(d.Spec, &spec); err != nil {
			return nil, fmt.Errorf("agent %q: %w", d.Name, err)
		}
		a := &Agent{}
		if now := b.deployed[d.Name]; now != nil {
			*a = *now
		} else if !spec.Direct {
			return nil, fmt.Errorf("agent %q is not deployed any more: its model is not known here", d.Name)
		}
		deployedTools := map[string]*Tool{}
		for _, t := range a.Tools {
			deployedTools[t.Name] = t
		}
		for _, ts := range a.Toolsets {
			for _, t := range ts.Tools() {
				deployedTools[t.Name] = t
			}
		}
		if err := spec.apply(a); err != nil {
			return nil, fmt.Errorf("agent %q: %w", d.Name, err)
		}
		a.Toolsets, a.Tools = nil, make([]*Tool, 0, len(d.Tools))
		for _, raw := range d.Tools {
			t, err := rebuildTool(raw, deployedTools)
			if err != nil {
				return nil, fmt.Errorf("agent %q: %w", d.Name, err)
			}
			a.Tools = append(a.Tools, t)
		}
		la, err := a.compile()
		if err != nil {
			return nil, err
		}
		la.FollowLatest = false // it is the session's own definition
		out = append(out, la)
	}
	return out, nil
}

// rebuildTool makes a tool of a stored definition again from its spec,
// with its handler, preview and escalation from the tool deployed now
// under its name.
func rebuildTool(raw json.RawMessage, deployed map[string]*Tool) (*Tool, error) {
	var s toolSpec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("a tool: %w", err)
	}
	t := &Tool{}
	now := deployed[s.Name]
	if now != nil {
		*t = *now
	}
	if s.Kind == engine.ToolFunction && (now == nil || now.Handler == nil) {
		name := s.Name
		t.Handler = func(context.Context, json.RawMessage) (string, error) {
			return "", fmt.Errorf("tool %q is not deployed any more: this session runs under the definition it started with, which had it; the call did not run", name)
		}
		t.Preview, t.Escalation = nil, nil
	}
	approval, err := s.Approval.policy(t.Approval)
	if err != nil {
		return nil, fmt.Errorf("tool %q: approval: %w", s.Name, err)
	}
	rules := make([]ApprovalRule, len(s.ApprovalRules))
	for i, r := range s.ApprovalRules {
		rules[i].Approvers = r.Approvers
		var deployedIf Policy
		for _, d := range t.ApprovalRules {
			if d.If.Rule() == r.If.Rule {
				deployedIf, rules[i].Escalation = d.If, d.Escalation
				break
			}
		}
		if rules[i].If, err = r.If.policy(deployedIf); err != nil {
			return nil, fmt.Errorf("tool %q: approval rule %d: %w", s.Name, i, err)
		}
	}
	if len(rules) == 0 {
		rules = nil
	}
	if approval.IsNever() {
		t.Preview, t.Escalation = nil, nil // they belong to calls that ask
	}
	t.Name, t.Description, t.Parameters, t.kind, t.target, t.mode, t.Runs = s.Name, s.Description, s.Parameters, s.Kind, s.Target, s.Mode, s.Runs
	t.Approval, t.Approvers, t.ApprovalRules, t.Confirmation, t.Idempotent = approval, s.Approvers, rules, s.Confirmation, s.Idempotent
	t.ApprovalTTL, t.StandingRules, t.Wait, t.ResultSchema, t.Timeout = s.ApprovalTTL, s.StandingRules, s.Wait, s.ResultSchema, s.Timeout
	return t, nil
}
