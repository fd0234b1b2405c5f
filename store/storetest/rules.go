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
