package local

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

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

// decisionChanges are what a step's decisions add beside its events, for
// its commit: the standing rules they grant, the rules that decided calls
// (one id per decision), and a record of each decided approval
// (store.Head.Rules, RuleUses, Decisions).
func decisionChanges(head store.Head, step engine.Step) (granted []session.Rule, uses []string, records []store.DecisionRecord, err error) {
	for i := range step.Events {
		ev := &step.Events[i]
		if ev.Type != session.EventDecision {
			continue
		}
		p, err := engine.Payload(step.Events, step.Payloads, i)
		if err != nil {
			return nil, nil, nil, err
		}
		d, ok := p.(*engine.DecisionMade)
		if !ok {
			continue
		}
		if d.Granted != nil {
			granted = append(granted, *d.Granted)
		}
		if d.Granted == nil && strings.HasPrefix(d.Rule, "rul_") {
			uses = append(uses, d.Rule)
		}
		if d.Kind == session.KindApproval && (d.Action == session.ActionApprove || d.Action == session.ActionReject) {
			records = append(records, decisionRecord(head, ev, d))
		}
	}
	return granted, uses, records, nil
}

// decisionRecord is the record of decision d, event ev of head's session.
func decisionRecord(head store.Head, ev *session.Event, d *engine.DecisionMade) store.DecisionRecord {
	r := store.DecisionRecord{ID: head.ID + "/" + d.InterruptID, Tenant: head.Tenant, SessionID: head.ID, Agent: ev.Agent, Tool: d.Tool,
		Shape: session.ConditionFor(d.Arguments), Action: d.Action, Edited: len(d.NewArgs) > 0, Rule: d.Rule,
		Approver: strings.ReplaceAll(d.Actor.Identity(), "\x00", " "), Name: d.Actor.Who(), DecidedAt: ev.Time.UTC()}
	r.Expired = isExpiry(d.Actor)
	if d.AskedAt != nil {
		r.AskedAt = d.AskedAt.UTC()
	}
	if d.Action == session.ActionReject || r.Edited {
		r.Detail, _ = json.Marshal(struct { // strings and JSON the event holds: cannot fail
			Arguments    json.RawMessage `json:"arguments,omitempty"`
			NewArguments json.RawMessage `json:"new_arguments,omitempty"`
			Reason       string          `json:"reason,omitempty"`
		}{d.Arguments, d.NewArgs, d.Reason})
	}
	return r
}

// Rules is cairn.Runner.Rules (documented there).
func (r *Runner) Rules(ctx context.Context, actor session.Actor, q session.RuleQuery) ([]session.Rule, error) {
	rs, err := r.ruleStore()
	if err != nil {
		return nil, err
	}
	if err := approverOnly(actor, "standing rules are listed"); err != nil {
		return nil, err
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
	if err := approverOnly(actor, "standing rule "+id+" is revoked"); err != nil {
		return session.Rule{}, err
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

// SuggestionPolicy is cairn.SuggestionPolicy.
type SuggestionPolicy = session.SuggestionPolicy

// Defaults of SuggestionPolicy, and how far back a suggestion looks.
const (
	DefaultSuggestAfter  = 20
	DefaultSuggestPeople = 2
	// suggestWindow bounds how many of a call shape's last decisions a
	// suggestion reads (one index walk; ten times the approvals it needs,
	// at least 200): "never rejected" is within them.
	suggestWindow = 1000
)

// suggest sets the suggestion of each approval of a page of the inbox
// that the decision history supports (SuggestionPolicy). Each call shape
// of the page is one read of its last decisions. A read that fails
// suggests nothing (and is logged): suggestions are advice.
func (r *Runner) suggest(ctx context.Context, items []session.PendingInterrupt) {
	pol := r.suggestions
	ds, ok := r.store.(store.Decisions)
	if pol.Off || !ok {
		return
	}
	n, k := cmp.Or(pol.MinApprovals, DefaultSuggestAfter), cmp.Or(pol.MinPeople, DefaultSuggestPeople)
	tools := r.compiled.Load().tools
	found := map[store.DecisionKey]*session.Suggestion{}
	for i := range items {
		it := &items[i]
		in := &it.Interrupt
		if in.Kind != session.KindApproval || in.InDoubt || in.Required > 1 || in.Approvers != nil && in.Approvers.NotRequester || len(in.Path) == 0 || in.Remote != nil {
			continue
		}
		agent := in.Path[len(in.Path)-1].Agent
		t := tools[agent][in.Tool]
		if t == nil || t.Engine.Rules.Forbidden {
			continue
		}
		key := store.DecisionKey{Tenant: it.Tenant, Agent: agent, Tool: in.Tool, Shape: session.ConditionFor(in.Arguments)}
		s, seen := found[key]
		if !seen {
			recs, err := ds.LatestDecisions(ctx, key, min(suggestWindow, max(10*n, 200)))
			if err != nil {
				r.log.WarnContext(ctx, "the decision history could not be read; no suggestion", "tool", in.Tool, "error", err)
				return
			}
			s = earned(recs, n, k)
			if s != nil {
				s.Rule = session.SuggestedRule{Action: session.ActionApprove, Tool: in.Tool, Agent: agent, Scope: session.ScopeAgent, If: key.Shape,
					Duration: session.FormatRuleDuration(min(t.Engine.Rules.Max(), session.DefaultRuleDuration))}
			}
			found[key] = s
		}
		it.Suggestion = s
	}
}

// earned is the suggestion recs support, newest first: at least n
// approvals as asked by at least k people, none rejected or edited. The
// decisions of rules and expiries are no one's and do not count.
func earned(recs []store.DecisionRecord, n, k int) *session.Suggestion {
	var ev session.Evidence
	people := map[string]bool{}
	for _, rec := range recs {
		if rec.Rule != "" || rec.Expired {
			continue
		}
		if rec.Action != session.ActionApprove || rec.Edited {
			return nil
		}
		ev.Approvals++
		people[rec.Approver+"\x00"+rec.Name] = true
		ev.Since = rec.DecidedAt
	}
	if ev.Approvals < n || len(people) < k {
		return nil
	}
	ev.People = len(people)
	return &session.Suggestion{Evidence: ev}
}

// approverOnly refuses (ErrForbidden) what only approvers, admins and the
// program may do (what says what, for the message): the governance reads
// and acts that decide nothing themselves (rules, analytics).
func approverOnly(actor session.Actor, what string) error {
	if actor.Trusted() || session.RoleAtLeast(actor.Role, session.RoleApprover) {
		return nil
	}
	return &session.Error{Code: session.CodeForbidden, Message: fmt.Sprintf("%s for approvers and admins; %s is neither", what, actor.Who())}
}
