package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store/sqlite"
)

// ruleNode is a runner on its own handle of the SQLite file at path whose
// agent deploys to the environment the user names.
func ruleNode(t *testing.T, path string, runs *atomic.Int32) *cairn.Runner {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	deploy := &cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always(),
		Parameters: json.RawMessage(`{"type":"object","properties":{"env":{"type":"string"}}}`),
		Approvers:  &cairn.Approvers{Groups: []string{"ops"}},
		Handler: func(ctx context.Context, args json.RawMessage) (string, error) {
			runs.Add(1)
			return "deployed " + string(args), nil
		}}
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"{{.Input}}"}`}}}, scripted.Reply{Text: "{{.LastResult}}"})
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{deploy}}}, &cairn.RunnerOptions{Store: st})
	t.Cleanup(func() { r.Close(); st.Close() })
	return r
}

// A standing rule granted on one process decides the next matching call on
// another at once (no pause), recorded with the rule's id and counted; a
// call outside its condition pauses; revoked, it decides nothing, on any
// process, from the next call on. Who may grant, list and revoke is
// checked.
func TestStandingRuleAcrossRunners(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	var runs atomic.Int32
	a, b := ruleNode(t, path, &runs), ruleNode(t, path, &runs)
	ana := cairn.Actor{Name: "ana", Subject: "ana", Role: session.RoleApprover, Groups: []string{"ops"}, Via: session.ViaToken}
	dev := cairn.Actor{Name: "dev", Subject: "dev", Role: session.RoleApprover, Groups: []string{"dev"}, Via: session.ViaToken}
	admin := cairn.Actor{Name: "root", Subject: "root", Role: session.RoleAdmin, Via: session.ViaToken}
	user := cairn.Actor{Name: "u", Subject: "u", Role: session.RoleUser, Via: session.ViaToken}

	s := check.NoErr(t)(a.Start(ctx, "main", "staging", nil))
	if s.Status != cairn.StatusPaused {
		t.Fatalf("first call: %+v", s)
	}
	grant := []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove, Rule: &cairn.RuleGrant{If: `args.env == "staging"`, Duration: "72h"}}}
	// Beyond the grantor's groups: 403, nothing recorded.
	if _, err := a.Resume(ctx, s.ID, s.Seq, grant, &cairn.TurnOptions{Actor: dev}); !errors.Is(err, cairn.ErrNotAnApprover) {
		t.Fatalf("a grant by someone outside ops: %v", err)
	}
	if rules := check.Must[[]cairn.Rule](t)(a.Rules(ctx, admin, cairn.RuleQuery{All: true})); len(rules) != 0 {
		t.Fatalf("a refused grant stored %+v", rules)
	}
	s = check.NoErr(t)(a.Resume(ctx, s.ID, s.Seq, grant, &cairn.TurnOptions{Actor: ana}))
	if s.Status != cairn.StatusCompleted || runs.Load() != 1 {
		t.Fatalf("the granting decision: %+v, %d runs", s, runs.Load())
	}
	rules := check.Must[[]cairn.Rule](t)(b.Rules(ctx, ana, cairn.RuleQuery{}))
	if len(rules) != 1 || rules[0].GrantedBy.Name != "ana" || rules[0].If != `args.env == "staging"` || rules[0].Uses != 0 {
		t.Fatalf("rules on B: %+v", rules)
	}
	id := rules[0].ID

	// On B, another session: decided by the rule, no pause.
	s2 := check.NoErr(t)(b.Start(ctx, "main", "staging", nil))
	if s2.Status != cairn.StatusCompleted || runs.Load() != 2 {
		t.Fatalf("a matching call on B: %+v, %d runs", s2, runs.Load())
	}
	decided := decisionsOf(t, b, s2.ID)
	if len(decided) != 1 || decided[0].Rule != id || decided[0].Actor.Name != "ana" || decided[0].Action != cairn.ActionApprove {
		t.Fatalf("the rule's decision: %+v", decided)
	}
	// Outside its condition: a pause.
	if s3 := check.NoErr(t)(b.Start(ctx, "main", "prod", nil)); s3.Status != cairn.StatusPaused {
		t.Fatalf("a call outside the condition: %+v", s3)
	}
	if r := check.Must[[]cairn.Rule](t)(a.Rules(ctx, ana, cairn.RuleQuery{})); r[0].Uses != 1 {
		t.Fatalf("uses: %+v", r[0])
	}

	// Listing and revoking are for approvers and admins of the rule's tenant.
	if _, err := a.Rules(ctx, user, cairn.RuleQuery{}); !errors.Is(err, cairn.ErrForbidden) {
		t.Fatalf("a user lists rules: %v", err)
	}
	if _, err := a.RevokeRule(ctx, user, id); !errors.Is(err, cairn.ErrForbidden) {
		t.Fatalf("a user revokes: %v", err)
	}
	if _, err := a.RevokeRule(ctx, cairn.Actor{Name: "x", Role: session.RoleAdmin, Tenant: "acme", Via: session.ViaToken}, id); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("another tenant's admin revokes: %v", err)
	}
	revoked := check.Must[cairn.Rule](t)(a.RevokeRule(ctx, dev, id))
	if revoked.RevokedAt == nil || revoked.RevokedBy.Name != "dev" {
		t.Fatalf("revoked: %+v", revoked)
	}
	// Right after: on B, the next matching call pauses.
	s4 := check.NoErr(t)(b.Start(ctx, "main", "staging", nil))
	if s4.Status != cairn.StatusPaused || runs.Load() != 2 {
		t.Fatalf("a call after the revocation: %+v, %d runs", s4, runs.Load())
	}
	if live := check.Must[[]cairn.Rule](t)(b.Rules(ctx, ana, cairn.RuleQuery{})); len(live) != 0 {
		t.Fatalf("live after revocation: %+v", live)
	}
	if all := check.Must[[]cairn.Rule](t)(b.Rules(ctx, ana, cairn.RuleQuery{All: true})); len(all) != 1 || all[0].RevokedAt == nil || all[0].Uses != 1 {
		t.Fatalf("every rule: %+v", all)
	}
}

// decisionsOf reads a session's decision events.
func decisionsOf(t *testing.T, r *cairn.Runner, id string) []session.DecisionMade {
	t.Helper()
	var out []session.DecisionMade
	for _, ev := range check.Events(t)(r.Events(context.Background(), id, 0)) {
		if ev.Type != session.EventDecision {
			continue
		}
		var d session.DecisionMade
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// The inbox offers a standing rule where the history supports it: 40
// approvals of the same call shape by 3 people give a suggestion with
// that evidence (the grant it names decides the next such call); a
// rejection among them, an edit, or too few people give none; another
// shape has its own history.
func TestSuggestionsFromTheHistory(t *testing.T) {
	ctx := context.Background()
	people := []cairn.Actor{
		{Name: "ana", Subject: "ana", Role: session.RoleApprover, Groups: []string{"ops"}, Via: session.ViaToken},
		{Name: "bo", Subject: "bo", Role: session.RoleApprover, Groups: []string{"ops"}, Via: session.ViaToken},
		{Name: "cy", Subject: "cy", Role: session.RoleApprover, Groups: []string{"ops"}, Via: session.ViaToken},
	}
	decide := func(t *testing.T, r *cairn.Runner, env string, d cairn.Decision, who cairn.Actor) {
		t.Helper()
		s := check.NoErr(t)(r.Start(ctx, "main", env, nil))
		d.InterruptID = s.Interrupts[0].ID
		check.NoErr(t)(r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{d}, &cairn.TurnOptions{Actor: who}))
	}
	pendingOf := func(t *testing.T, r *cairn.Runner, env string) cairn.PendingInterrupt {
		t.Helper()
		s := check.NoErr(t)(r.Start(ctx, "main", env, nil))
		items, _, err := r.InterruptsPage(ctx, cairn.Page{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if it.SessionID == s.ID {
				return it
			}
		}
		t.Fatalf("%s is not in the inbox", s.ID)
		return cairn.PendingInterrupt{}
	}
	approve := cairn.Decision{Action: cairn.ActionApprove}
	var runs atomic.Int32
	history := func(t *testing.T, mid *cairn.Decision) *cairn.Runner {
		r := ruleNode(t, filepath.Join(t.TempDir(), "c.db"), &runs)
		for i := range 40 {
			d := approve
			if mid != nil && i == 20 {
				d = *mid
			}
			decide(t, r, "staging", d, people[i%3])
		}
		return r
	}

	t.Run("earned", func(t *testing.T) {
		r := history(t, nil)
		began := time.Now()
		it := pendingOf(t, r, "staging")
		s := it.Suggestion
		if s == nil || s.Evidence.Approvals != 40 || s.Evidence.People != 3 || s.Evidence.Since.IsZero() || s.Evidence.Since.After(began) {
			t.Fatalf("the suggestion: %+v", s)
		}
		if s.Rule.If != `args.env == "staging"` || s.Rule.Tool != "deploy" || s.Rule.Agent != "main" || s.Rule.Action != cairn.ActionApprove || s.Rule.Duration != "30d" {
			t.Fatalf("the suggested rule: %+v", s.Rule)
		}
		if other := pendingOf(t, r, "prod"); other.Suggestion != nil {
			t.Fatalf("another shape, never decided: %+v", other.Suggestion)
		}
		// Taking it: the grant it names, with the approval.
		check.NoErr(t)(r.Resume(ctx, it.SessionID, it.Seq, []cairn.Decision{{InterruptID: it.ID, Action: cairn.ActionApprove, Rule: s.Grant()}}, &cairn.TurnOptions{Actor: people[0]}))
		if next := check.NoErr(t)(r.Start(ctx, "main", "staging", nil)); next.Status != cairn.StatusCompleted {
			t.Fatalf("the next call after taking the suggestion: %+v", next)
		}
	})
	t.Run("one rejection", func(t *testing.T) {
		r := history(t, &cairn.Decision{Action: cairn.ActionReject, Reason: "not now"})
		if s := pendingOf(t, r, "staging").Suggestion; s != nil {
			t.Fatalf("a suggestion despite a rejection: %+v", s)
		}
	})
	t.Run("one edit", func(t *testing.T) {
		r := history(t, &cairn.Decision{Action: cairn.ActionApprove, Arguments: []byte(`{"env":"staging"}`)})
		if s := pendingOf(t, r, "staging").Suggestion; s != nil {
			t.Fatalf("a suggestion despite an edit: %+v", s)
		}
	})
	t.Run("one person", func(t *testing.T) {
		r := ruleNode(t, filepath.Join(t.TempDir(), "c.db"), &runs)
		for range 25 {
			decide(t, r, "staging", approve, people[0])
		}
		if s := pendingOf(t, r, "staging").Suggestion; s != nil {
			t.Fatalf("a suggestion from one person: %+v", s)
		}
	})
}
