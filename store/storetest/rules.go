package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// testRulesCommitWithTheDecision: a granted rule is stored by the append
// that carries it (and not by a refused one), a second grant of its id
// keeps the first, uses count one per id in RuleUses, a query selects by
// tenant, tool and liveness, and a revocation takes a rule out of the live
// ones at once, keeping its first revocation.
func testRulesCommitWithTheDecision(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	rs, ok := s.(store.Rules)
	if !ok {
		t.Skip("the store keeps no rules (store.Rules)")
	}
	at := epoch()
	week := at.Add(7 * 24 * time.Hour)
	rule := func(id, tenant, tool string, expires *time.Time) session.Rule {
		return session.Rule{ID: id, Tenant: tenant, Tool: tool, Agent: "main", Action: session.ActionApprove, Scope: session.ScopeAgent,
			If: `args.env == "staging"`, Session: "s1", Interrupt: "int_1", GrantedAt: at,
			GrantedBy: session.Actor{Name: "alice", Role: session.RoleApprover, Groups: []string{"ops"}, Via: session.ViaToken}, ExpiresAt: expires}
	}
	h := headAt("s1", 1, "running")
	h.Rules = []session.Rule{rule("rul_a", "", "deploy", &week), rule("rul_b", "acme", "deploy", nil)}
	must(t, s.Append(ctx, h, 0, []session.Event{event(1)}))
	// A refused append stores nothing of its rules.
	stale := headAt("s1", 2, "running")
	stale.Rules, stale.RuleUses = []session.Rule{rule("rul_c", "", "deploy", nil)}, []string{"rul_a"}
	if err := s.Append(ctx, stale, 5, []session.Event{event(2)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a stale append: %v", err)
	}
	if _, err := rs.Rule(ctx, "rul_c"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the rule of a refused append: %v", err)
	}
	h = headAt("s1", 2, "running")
	again := rule("rul_a", "", "other", nil)
	h.Rules, h.RuleUses = []session.Rule{again}, []string{"rul_a", "rul_a", "rul_b"}
	must(t, s.Append(ctx, h, 1, []session.Event{event(2)}))

	got, err := rs.Rule(ctx, "rul_a")
	if err != nil || got.Tool != "deploy" || got.Uses != 2 || got.ExpiresAt == nil || !got.ExpiresAt.Equal(week) || got.GrantedBy.Name != "alice" ||
		!slices.Equal(got.GrantedBy.Groups, []string{"ops"}) || got.If != `args.env == "staging"` || got.RevokedAt != nil {
		t.Fatalf("rul_a: %+v %v", got, err)
	}
	ids := func(q store.RuleQuery) []string {
		t.Helper()
		rules, err := rs.Rules(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rules {
			out = append(out, r.ID)
		}
		return out
	}
	live := at.Add(time.Hour)
	for _, c := range []struct {
		q    store.RuleQuery
		want []string
	}{
		{store.RuleQuery{LiveAt: live}, []string{"rul_a"}},
		{store.RuleQuery{Tenant: "acme", LiveAt: live, Tools: []string{"deploy", "x"}}, []string{"rul_b"}},
		{store.RuleQuery{Tenant: "acme", LiveAt: live, Tools: []string{"x"}}, nil},
		{store.RuleQuery{AllTenants: true}, []string{"rul_a", "rul_b"}},
		{store.RuleQuery{LiveAt: week}, nil}, // expired
		{store.RuleQuery{AllTenants: true, Limit: 1}, []string{"rul_a"}},
	} {
		if got := ids(c.q); !slices.Equal(got, c.want) {
			t.Errorf("%+v: %v, want %v", c.q, got, c.want)
		}
	}
	by := session.Actor{Name: "bob", Role: session.RoleAdmin, Via: session.ViaToken}
	revoked, err := rs.RevokeRule(ctx, "rul_a", by, live)
	if err != nil || revoked.RevokedAt == nil || !revoked.RevokedAt.Equal(live) || revoked.RevokedBy == nil || revoked.RevokedBy.Name != "bob" || revoked.Uses != 2 {
		t.Fatalf("revoked: %+v %v", revoked, err)
	}
	if got := ids(store.RuleQuery{LiveAt: live}); len(got) != 0 {
		t.Fatalf("live after the revocation: %v", got)
	}
	if got := ids(store.RuleQuery{}); !slices.Equal(got, []string{"rul_a"}) {
		t.Fatalf("every rule of the default tenant: %v", got)
	}
	if again, err := rs.RevokeRule(ctx, "rul_a", session.Actor{Name: "carol"}, live.Add(time.Hour)); err != nil || again.RevokedBy.Name != "bob" || !again.RevokedAt.Equal(live) {
		t.Fatalf("revoked twice: %+v %v", again, err)
	}
	if _, err := rs.RevokeRule(ctx, "rul_none", by, live); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoking no rule: %v", err)
	}
}

// testDecisionsCommitWithTheirEvents: decision records are stored by the
// append that carries them (not by a refused one), read by tenant and
// time range oldest first, and by call shape newest first.
func testDecisionsCommitWithTheirEvents(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	ds, ok := s.(store.Decisions)
	if !ok {
		t.Skip("the store keeps no decision records (store.Decisions)")
	}
	at := epoch()
	rec := func(id, tenant, shape string, action session.Action, minutes int) store.DecisionRecord {
		return store.DecisionRecord{ID: "s1/" + id, Tenant: tenant, SessionID: "s1", Agent: "main", Tool: "deploy", Shape: shape, Action: action,
			Approver: " ana", Name: "ana", AskedAt: at, DecidedAt: at.Add(time.Duration(minutes) * time.Minute)}
	}
	h := headAt("s1", 1, "running")
	h.Decisions = []store.DecisionRecord{rec("a", "", "x", session.ActionApprove, 1), rec("b", "acme", "x", session.ActionApprove, 2)}
	must(t, s.Append(ctx, h, 0, []session.Event{event(1)}))
	stale := headAt("s1", 2, "running")
	stale.Decisions = []store.DecisionRecord{rec("c", "", "x", session.ActionReject, 3)}
	if err := s.Append(ctx, stale, 7, []session.Event{event(2)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a stale append: %v", err)
	}
	h = headAt("s1", 2, "running")
	rejected := rec("d", "", "x", session.ActionReject, 5)
	rejected.Detail = []byte(`{"reason":"no"}`)
	unasked := rec("e", "", "y", session.ActionApprove, 4)
	unasked.AskedAt, unasked.Rule = time.Time{}, "rul_1"
	h.Decisions = []store.DecisionRecord{rejected, unasked}
	must(t, s.Append(ctx, h, 1, []session.Event{event(2)}))

	read := func(q store.DecisionQuery) []store.DecisionRecord {
		t.Helper()
		var out []store.DecisionRecord
		if err := ds.Decisions(ctx, q, func(d *store.DecisionRecord) bool { out = append(out, *d); return true }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	ids := func(rs []store.DecisionRecord) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	all := read(store.DecisionQuery{})
	if got := ids(all); !slices.Equal(got, []string{"s1/a", "s1/e", "s1/d"}) {
		t.Fatalf("the default tenant's, oldest first: %v", got)
	}
	if a := all[0]; a.Shape != "x" || a.Action != session.ActionApprove || a.Approver != " ana" || !a.AskedAt.Equal(at) || !a.DecidedAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("s1/a: %+v", a)
	}
	if e := all[1]; !e.AskedAt.IsZero() || e.Rule != "rul_1" || e.Detail != nil {
		t.Fatalf("s1/e: %+v", e)
	}
	if d := all[2]; string(d.Detail) != `{"reason":"no"}` || d.Action != session.ActionReject {
		t.Fatalf("s1/d: %+v", d)
	}
	if got := ids(read(store.DecisionQuery{AllTenants: true, Since: at.Add(2 * time.Minute), Until: at.Add(5 * time.Minute)})); !slices.Equal(got, []string{"s1/b", "s1/e"}) {
		t.Fatalf("every tenant's in [2m, 5m): %v", got)
	}
	var first []string
	if err := ds.Decisions(ctx, store.DecisionQuery{}, func(d *store.DecisionRecord) bool { first = append(first, d.ID); return false }); err != nil || len(first) != 1 {
		t.Fatalf("stopping early: %v %v", first, err)
	}
	latest, err := ds.LatestDecisions(ctx, store.DecisionKey{Agent: "main", Tool: "deploy", Shape: "x"}, 5)
	if err != nil || !slices.Equal(ids(latest), []string{"s1/d", "s1/a"}) {
		t.Fatalf("latest of shape x: %v %v", ids(latest), err)
	}
	if latest, _ := ds.LatestDecisions(ctx, store.DecisionKey{Agent: "main", Tool: "deploy", Shape: "x"}, 1); !slices.Equal(ids(latest), []string{"s1/d"}) {
		t.Fatalf("the latest one: %v", ids(latest))
	}
}
