package local

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// rulesFor reads the standing rules, live now, of the tenant's tools that
// agent's calls name and that a rule may decide (they ask for approval,
// and their configuration allows rules). Nothing is read when there are
// none such, or the store keeps no rules. A read that fails reads no
// rules: the calls wait for a person (fail closed), and the failure is
// logged.
func (r *Runner) rulesFor(ctx context.Context, tenant, agent string, calls []model.ToolCall) []session.Rule {
	rs, ok := r.store.(store.Rules)
	if !ok || len(calls) == 0 {
		return nil
	}
	tools := r.compiled.Load().tools[agent]
	var names []string
	for _, c := range calls {
		t := tools[c.Name]
		if t == nil || t.Engine.NeedsApproval == nil || t.Engine.Rules.Forbidden || slices.Contains(names, c.Name) {
			continue
		}
		names = append(names, c.Name)
	}
	if len(names) == 0 {
		return nil
	}
	rules, err := rs.Rules(ctx, store.RuleQuery{Tenant: tenant, Tools: names, LiveAt: r.now()})
	if err != nil {
		r.log.WarnContext(ctx, "standing rules could not be read; the calls wait for a person", "agent", agent, "tools", names, "error", err)
		return nil
	}
	return rules
}

// ruleChanges are the standing rules a step's decisions grant and the
// rules that decided calls in it, one id per decision, for its commit
// (store.Head.Rules, RuleUses).
func ruleChanges(step engine.Step) (granted []session.Rule, uses []string, err error) {
	for i := range step.Events {
		if step.Events[i].Type != session.EventDecision {
			continue
		}
		p, err := engine.Payload(step.Events, step.Payloads, i)
		if err != nil {
			return nil, nil, err
		}
		d, ok := p.(*engine.DecisionMade)
		if !ok {
			continue
		}
		if d.Granted != nil {
			granted = append(granted, *d.Granted)
		}
		if d.Granted == nil && len(d.Rule) > 4 && d.Rule[:4] == "rul_" {
			uses = append(uses, d.Rule)
		}
	}
	return granted, uses, nil
}

// RuleQuery is what Rules lists.
type RuleQuery struct {
	// Tool, when set, keeps that tool's rules.
	Tool string
	// All lists revoked and expired rules too; else the live ones.
	All bool
}

// Rules is cairn.Runner.Rules (documented there).
func (r *Runner) Rules(ctx context.Context, actor session.Actor, q RuleQuery) ([]session.Rule, error) {
	rs, err := r.ruleStore()
	if err != nil {
		return nil, err
	}
	if !actor.Trusted() && !session.RoleAtLeast(actor.Role, session.RoleApprover) {
		return nil, &session.Error{Code: session.CodeForbidden, Message: fmt.Sprintf("standing rules are listed for approvers and admins; %s is not one", actor.Who())}
	}
	sq := store.RuleQuery{Tenant: actor.Tenant, AllTenants: actor.EveryTenant()}
	if q.Tool != "" {
		sq.Tools = []string{q.Tool}
	}
	if !q.All {
		sq.LiveAt = r.now()
	}
	return rs.Rules(ctx, sq)
}

// RevokeRule is cairn.Runner.RevokeRule (documented there).
func (r *Runner) RevokeRule(ctx context.Context, actor session.Actor, id string) (session.Rule, error) {
	rs, err := r.ruleStore()
	if err != nil {
		return session.Rule{}, err
	}
	rule, err := rs.Rule(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && !actor.InTenant(rule.Tenant) {
		return session.Rule{}, &session.Error{Code: session.CodeNotFound, Err: session.ErrNotFound, Message: fmt.Sprintf("no standing rule %q", id)}
	}
	if err != nil {
		return session.Rule{}, err
	}
	// Revoking only makes calls ask again (fail closed): any approver of
	// the tenant may, not only the grantor.
	if !actor.Trusted() && !session.RoleAtLeast(actor.Role, session.RoleApprover) {
		return session.Rule{}, &session.Error{Code: session.CodeForbidden,
			Message: fmt.Sprintf("standing rule %s is revoked by an approver or an admin; %s is neither", id, actor.Who())}
	}
	return rs.RevokeRule(ctx, id, actor, r.now())
}

func (r *Runner) ruleStore() (store.Rules, error) {
	rs, ok := r.store.(store.Rules)
	if !ok {
		return nil, &session.Error{Code: session.CodeInvalidRequest, Message: "this runner's store keeps no standing rules"}
	}
	return rs, nil
}
