package config

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/a2a/a2aagent"
	"github.com/cairnhq/cairn/internal/suggest"
	"github.com/cairnhq/cairn/model"
)

// agent builds one agent: its model, its tools, sub-agents and handoffs.
func (l *loader) agent(name string, f *File, models map[string]model.Model, tools map[string]*cairn.Tool) (*cairn.Agent, []toolSlot, error) {
	a, p := f.Agents[name], "agents."+name
	if a.Model == "" {
		return nil, nil, l.errf(p+".model", "missing; name one of the models: %s", strings.Join(sortedKeys(f.Models), ", "))
	}
	m := models[a.Model]
	if m == nil {
		return nil, nil, l.errf(p+".model", "unknown model %q; defined models: %s%s", a.Model, strings.Join(sortedKeys(f.Models), ", "), suggest.Hint(a.Model, sortedKeys(f.Models)))
	}
	if a.MaxIterations < 0 {
		return nil, nil, l.errf(p+".max_iterations", "must be positive, got %d", a.MaxIterations)
	}
	agent := &cairn.Agent{Name: name, Instructions: a.Instructions, Model: m, MaxIterations: a.MaxIterations,
		NoClientTools: a.FrontendTools != nil && !*a.FrontendTools, OnNewVersion: cairn.VersionPolicy(a.OnNewVersion)}
	switch agent.OnNewVersion {
	case "", cairn.VersionPin, cairn.VersionLatest:
	default:
		return nil, nil, l.errf(p+".on_new_version", "%q is not pin (a paused session resumes under the definition it started with; the default) or latest (under the one configured now)", a.OnNewVersion)
	}
	if a.Approvers != nil {
		approvers, err := l.approversOf(p+".approvers", *a.Approvers)
		if err != nil {
			return nil, nil, err
		}
		agent.Approvers = approvers
	}
	// Which of its tools have a deadline is theirs to say: checked as for
	// a tool that asks and has one (the engine leaves out a before_expiry
	// step of an approval without a deadline).
	var err error
	if agent.Escalation, err = l.escalation(p, a.Escalation, a.OnExpiry, &cairn.Tool{Approval: cairn.Always(), ApprovalTTL: time.Hour}, true, nil); err != nil {
		return nil, nil, err
	}
	if a.OutputSchema != nil {
		b, err := json.Marshal(a.OutputSchema)
		if err != nil {
			return nil, nil, l.errf(p+".output_schema", "%v", err)
		}
		if err := cairn.CheckSchema(b); err != nil {
			return nil, nil, l.errf(p+".output_schema", "not a valid JSON Schema: %v", err)
		}
		agent.OutputSchema = b
	}
	if a.Review != "" {
		if a.OutputSchema == nil {
			return nil, nil, l.errf(p+".review", "needs output_schema: a person reviews a structured answer")
		}
		pol, err := reviewPolicy(a.Review)
		if err != nil {
			return nil, nil, l.errf(p+".review", "%v", err)
		}
		agent.Review = pol
	}
	var slots []toolSlot
	seen := map[string]bool{}
	for i, tn := range a.Tools {
		if strings.Contains(tn, ".") {
			server, tool, _ := strings.Cut(tn, ".")
			if _, ok := f.MCPServers[server]; !ok {
				names := sortedKeys(f.MCPServers)
				return nil, nil, l.errf(p+".tools", "tools[%d]: %q: no MCP server %q; configured: %s%s", i, tn, server, strings.Join(names, ", "), suggest.Hint(server, names))
			}
			if tool != "*" {
				if _, err := l.mcpOverride(tn); err != nil {
					return nil, nil, err
				}
			}
			slots = append(slots, toolSlot{key: p + ".tools", i: i, ref: tn})
			continue
		}
		t := tools[tn]
		if t == nil {
			return nil, nil, l.errf(p+".tools", "tools[%d]: unknown tool %q; defined tools: %s%s", i, tn, strings.Join(sortedKeys(f.Tools), ", "), suggest.Hint(tn, sortedKeys(f.Tools)))
		}
		if seen[tn] {
			return nil, nil, l.errf(p+".tools", "tool %q is listed twice", tn)
		}
		seen[tn] = true
		slots = append(slots, toolSlot{tool: t})
	}
	for i, sa := range a.Subagents {
		t, err := l.subagent(p, i, sa, seen)
		if err != nil {
			return nil, nil, err
		}
		slots = append(slots, toolSlot{tool: t})
	}
	for i, h := range a.Handoffs {
		t, err := l.handoff(p, name, i, h, seen)
		if err != nil {
			return nil, nil, err
		}
		slots = append(slots, toolSlot{tool: t})
	}
	return agent, slots, nil
}

// approvals builds the approvals agent from the approvals section (nil:
// any approver, no escalation).
func (l *loader) approvals(ac *ApprovalsConfig) (*cairn.Agent, error) {
	if ac == nil {
		return cairn.ApprovalsAgent(nil, nil), nil
	}
	var approvers *cairn.Approvers
	if ac.Approvers != nil {
		var err error
		if approvers, err = l.approversOf("approvals.approvers", *ac.Approvers); err != nil {
			return nil, err
		}
	}
	// A request says its own expiry (expires_in): a before_expiry step
	// applies to those that have one.
	escalation, err := l.escalation("approvals", ac.Escalation, ac.OnExpiry, &cairn.Tool{Approval: cairn.Always(), ApprovalTTL: time.Hour}, true, nil)
	if err != nil {
		return nil, err
	}
	return cairn.ApprovalsAgent(approvers, escalation), nil
}

// gateway reads the gateway section: the gateway and its direct agent,
// whose tools are every tool of its servers (resolved once they run).
func (l *loader) gateway(f *File) (*Gateway, *cairn.Agent, []toolSlot, error) {
	gc, p := f.Gateway, "gateway"
	gw := &Gateway{Hold: DefaultHold}
	if len(gc.Servers) == 0 {
		return nil, nil, nil, l.errf(p+".servers", "name the mcp_servers whose tools the gateway offers, like servers: [fs]")
	}
	var slots []toolSlot
	for i, name := range gc.Servers {
		if _, ok := f.MCPServers[name]; !ok {
			names := sortedKeys(f.MCPServers)
			return nil, nil, nil, l.errf(p+".servers", "servers[%d]: no MCP server %q; configured: %s%s", i, name, strings.Join(names, ", "), suggest.Hint(name, names))
		}
		if slices.Contains(gw.Servers, name) {
			return nil, nil, nil, l.errf(p+".servers", "servers[%d]: %q is listed twice", i, name)
		}
		gw.Servers = append(gw.Servers, name)
		slots = append(slots, toolSlot{key: p + ".servers", i: i, ref: name + ".*"})
	}
	if gc.Hold != "" {
		d, err := time.ParseDuration(gc.Hold)
		if err != nil || d <= 0 {
			return nil, nil, nil, l.errf(p+".hold", "%q is not a positive duration like 30s or 10m", gc.Hold)
		}
		gw.Hold = d
	}
	switch gc.Sessions {
	case "", "approvals":
	case "all":
		gw.AllSessions = true
	default:
		return nil, nil, nil, l.errf(p+".sessions", "%q is not one of approvals (a call that needs nobody's approval passes straight through), all (every call is a session)%s", gc.Sessions, suggest.Hint(gc.Sessions, []string{"approvals", "all"}))
	}
	agent := &cairn.Agent{Name: GatewayAgent, Direct: true}
	if gc.Approvers != nil {
		var err error
		if agent.Approvers, err = l.approversOf(p+".approvers", *gc.Approvers); err != nil {
			return nil, nil, nil, err
		}
	}
	var err error
	if agent.Escalation, err = l.escalation(p, gc.Escalation, gc.OnExpiry, &cairn.Tool{Approval: cairn.Always(), ApprovalTTL: time.Hour}, true, nil); err != nil {
		return nil, nil, nil, err
	}
	return gw, agent, slots, nil
}

// subagent builds the tool that offers another agent (subagents[i] of p).
func (l *loader) subagent(p string, i int, sa SubagentConfig, seen map[string]bool) (*cairn.Tool, error) {
	if err := l.otherAgent(p+".subagents", fmt.Sprintf("subagents[%d].agent", i), sa.Agent, ""); err != nil {
		return nil, err
	}
	name := sa.Tool
	if name == "" {
		name = "ask_" + sa.Agent
	}
	if !toolName.MatchString(name) || seen[name] {
		return nil, l.errf(p+".subagents", "subagents[%d].tool: %q is not a free tool name (1–64 letters, digits, _ or -, not used twice)", i, name)
	}
	seen[name] = true
	pol, err := approvalPolicy(sa.Approval)
	if err != nil {
		return nil, l.errf(p+".subagents", "subagents[%d].approval: %v", i, err)
	}
	spec := &cairn.Tool{Name: name, Description: sa.Description, Approval: pol, Confirmation: sa.Confirmation}
	if remote := l.remotes[sa.Agent]; remote != nil {
		if sa.Mode != "" && sa.Mode != "tool" {
			return nil, l.errf(p+".subagents", "subagents[%d].mode: %q is remote (a2a:): it is called as a tool; its questions reach your people as interrupts", i, sa.Agent)
		}
		opts := *remote
		opts.Name, opts.Description = name, cmp.Or(sa.Description, remote.Description)
		t, err := a2aagent.Tool(opts)
		if err != nil {
			return nil, l.errf(p+".subagents", "subagents[%d]: %v", i, err)
		}
		t.Approval, t.Confirmation = pol, sa.Confirmation
		return t, nil
	}
	switch sa.Mode {
	case "", "tool":
		return cairn.AgentTool(sa.Agent, spec), nil
	case "interactive":
		return cairn.InteractiveAgentTool(sa.Agent, spec), nil
	}
	return nil, l.errf(p+".subagents", "subagents[%d].mode: %q is not tool or interactive%s", i, sa.Mode, suggest.Hint(sa.Mode, []string{"tool", "interactive"}))
}

// handoff builds the transfer_to_<agent> tool of handoffs[i] of agent self.
func (l *loader) handoff(p, self string, i int, h HandoffConfig, seen map[string]bool) (*cairn.Tool, error) {
	if err := l.otherAgent(p+".handoffs", fmt.Sprintf("handoffs[%d]", i), h.Agent, self); err != nil {
		return nil, err
	}
	if l.remotes[h.Agent] != nil {
		return nil, l.errf(p+".handoffs", "handoffs[%d]: %q is remote (a2a:): the conversation cannot move to it; call it as a sub-agent (subagents: [{agent: %s}])", i, h.Agent, h.Agent)
	}
	pol, err := approvalPolicy(h.Approval)
	if err != nil {
		return nil, l.errf(p+".handoffs", "handoffs[%d].approval: %v", i, err)
	}
	t := cairn.Handoff(h.Agent, &cairn.Tool{Approval: pol, Confirmation: h.Confirmation})
	if seen[t.Name] {
		return nil, l.errf(p+".handoffs", "handoffs[%d]: %q is listed twice", i, h.Agent)
	}
	seen[t.Name] = true
	return t, nil
}

// otherAgent checks that agent names a defined agent other than self.
func (l *loader) otherAgent(key, what, agent, self string) error {
	names := sortedKeys(l.agents)
	if _, ok := l.agents[agent]; !ok {
		return l.errf(key, "%s: unknown agent %q; defined agents: %s%s", what, agent, strings.Join(names, ", "), suggest.Hint(agent, names))
	}
	if agent == self {
		return l.errf(key, "%s: %q is the agent itself; name another agent", what, agent)
	}
	return nil
}
