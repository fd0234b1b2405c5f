package cairn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store/sqlite"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

type refundArgs struct {
	Amount int `json:"amount"`
}

// person is an actor as the server makes one from a static token.
func person(name, role string, groups ...string) cairn.Actor {
	return cairn.Actor{Name: name, Subject: name, Role: role, Groups: groups, Via: session.ViaToken}
}

// governed is a runner with one agent whose refund tool asks approval
// from approvers, and counts its runs.
type governed struct {
	runner *cairn.Runner
	runs   atomic.Int32
	args   atomic.Value // the arguments of the last run
}

func newGoverned(t *testing.T, amount int, tool func(*cairn.Tool), opts *cairn.RunnerOptions) *governed {
	t.Helper()
	g := &governed{}
	spec := &cairn.Tool{Name: "refund", Description: "Refund.", Approval: cairn.Always()}
	tool(spec)
	refund := cairn.NewTool(spec, func(ctx context.Context, a refundArgs) (string, error) {
		g.runs.Add(1)
		g.args.Store(a.Amount)
		return "refunded", nil
	})
	call, _ := json.Marshal(refundArgs{Amount: amount})
	model := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "refund", Arguments: string(call)}}},
		scripted.Reply{Text: "{{.LastResult}}"},
	)
	var err error
	g.runner, err = cairn.NewRunner([]*cairn.Agent{{Name: "billing", Model: model, Tools: []*cairn.Tool{refund}}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.runner.Close() })
	return g
}

func (g *governed) start(t *testing.T, by cairn.Actor) *cairn.Session {
	t.Helper()
	s, err := g.runner.Start(context.Background(), "billing", "refund the order", &cairn.StartOptions{Actor: by, Owner: by.Name})
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 {
		t.Fatalf("not paused on one approval: %s %+v", s.Status, s.Interrupts)
	}
	return s
}

func (g *governed) approve(s *cairn.Session, seq int64, by cairn.Actor) (*cairn.Session, error) {
	return g.runner.Resume(context.Background(), s.ID, seq,
		[]cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, &cairn.TurnOptions{Actor: by})
}

// refused checks that err is want and that the session did not change.
func (g *governed) refused(t *testing.T, s *cairn.Session, err, want error, says string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
	if !strings.Contains(err.Error(), says) {
		t.Errorf("message %q does not say %q", err, says)
	}
	now, gerr := g.runner.Session(context.Background(), s.ID)
	if gerr != nil || now.Seq != s.Seq || now.Status != cairn.StatusPaused {
		t.Fatalf("a refused decision changed the session: seq %d → %d, %s (%v)", s.Seq, now.Seq, now.Status, gerr)
	}
}

func TestApproversGroups(t *testing.T) {
	g := newGoverned(t, 10, func(tl *cairn.Tool) { tl.Approvers = &cairn.Approvers{Groups: []string{"sre", "oncall"}} }, nil)
	s := g.start(t, person("uma", "user"))
	in := s.Interrupts[0]
	if in.Approvers == nil || len(in.Approvers.Groups) != 2 || in.Required != 0 {
		t.Fatalf("interrupt approvers %+v required %d", in.Approvers, in.Required)
	}
	_, err := g.approve(s, s.Seq, person("dev", "approver", "dev"))
	g.refused(t, s, err, cairn.ErrNotAnApprover, "member of sre or oncall")
	_, err = g.approve(s, s.Seq, person("uma", "user", "sre"))
	g.refused(t, s, err, cairn.ErrForbidden, "approver role")
	_, err = g.approve(s, s.Seq, person("root", "admin"))
	g.refused(t, s, err, cairn.ErrNotAnApprover, "member of sre")
	done, err := g.approve(s, s.Seq, person("ana", "approver", "oncall"))
	if err != nil || done.Status != cairn.StatusCompleted || g.runs.Load() != 1 {
		t.Fatalf("an approver in the group: %v, %v, %d runs", err, done, g.runs.Load())
	}
}

// The program that holds the Runner (an Actor with no Via) is trusted.
func TestTheProgramDecidesEverything(t *testing.T) {
	g := newGoverned(t, 10, func(tl *cairn.Tool) {
		tl.Approvers = &cairn.Approvers{Groups: []string{"sre"}, Count: 2, NotRequester: true}
	}, nil)
	s := g.start(t, cairn.Actor{})
	done, err := g.approve(s, s.Seq, cairn.Actor{Name: "deploy-bot"})
	if err != nil || done.Status != cairn.StatusCompleted || g.runs.Load() != 1 {
		t.Fatalf("the program: %v, %v, %d runs", err, done, g.runs.Load())
	}
}

func TestFourEyes(t *testing.T) {
	g := newGoverned(t, 10, func(tl *cairn.Tool) { tl.Approvers = &cairn.Approvers{Groups: []string{"finance"}, Count: 2} }, nil)
	s := g.start(t, person("uma", "user"))
	if s.Interrupts[0].Required != 2 {
		t.Fatalf("required %d, want 2", s.Interrupts[0].Required)
	}
	ana := person("ana", "approver", "finance")
	one, err := g.approve(s, s.Seq, ana)
	if err != nil {
		t.Fatal(err)
	}
	if one.Status != cairn.StatusPaused || len(one.Interrupts) != 1 || g.runs.Load() != 0 {
		t.Fatalf("after one of two approvals: %s, %d interrupts, %d runs", one.Status, len(one.Interrupts), g.runs.Load())
	}
	in := one.Interrupts[0]
	if in.ID != s.Interrupts[0].ID || len(in.Approvals) != 1 || in.Approvals[0].Actor.Name != "ana" || in.Approvals[0].At.IsZero() {
		t.Fatalf("the interrupt after one approval: %+v", in)
	}
	// The same person, through another token of the same subject, counts once.
	anaAgain := ana
	anaAgain.Name = "ana-laptop"
	_, err = g.approve(s, one.Seq, anaAgain)
	g.refused(t, one, err, cairn.ErrAlreadyApproved, "1 so far")
	if !errors.Is(err, cairn.ErrConflict) {
		t.Error("already approved is not a conflict")
	}
	// Bob decided on what he saw before ana's approval: the same arguments.
	done, err := g.approve(s, s.Seq, person("bob", "approver", "finance"))
	if err != nil || done.Status != cairn.StatusCompleted || g.runs.Load() != 1 {
		t.Fatalf("the second approval: %v, %v, %d runs", err, done, g.runs.Load())
	}
	events, err := g.runner.Events(context.Background(), s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var added, decided int
	for _, ev := range events {
		p, err := session.DecodeEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		switch p := p.(type) {
		case *session.ApprovalAdded:
			added++
			if p.Count != 1 || p.Required != 2 || p.Actor.Name != "ana" {
				t.Errorf("approval_added %+v", p)
			}
		case *session.DecisionMade:
			decided++
			if len(p.Approvals) != 2 || p.Approvals[0].Actor.Name != "ana" || p.Approvals[1].Actor.Name != "bob" || p.Actor.Name != "bob" {
				t.Errorf("the decision's approvals %+v", p.Approvals)
			}
		}
	}
	if added != 1 || decided != 1 {
		t.Fatalf("%d approval_added and %d decision events, want 1 and 1", added, decided)
	}
}

// An edit of the arguments starts the count over: everyone approves the
// same arguments, and an approval made before the edit is stale.
func TestFourEyesEditResets(t *testing.T) {
	g := newGoverned(t, 10, func(tl *cairn.Tool) { tl.Approvers = &cairn.Approvers{Count: 2} }, nil)
	s := g.start(t, person("uma", "user"))
	ana, bob := person("ana", "approver"), person("bob", "approver")
	one, err := g.approve(s, s.Seq, ana)
	if err != nil {
		t.Fatal(err)
	}
	edited, err := g.runner.Resume(context.Background(), s.ID, one.Seq,
		[]cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove, Arguments: json.RawMessage(`{"amount": 7}`)}}, &cairn.TurnOptions{Actor: bob})
	if err != nil {
		t.Fatal(err)
	}
	in := edited.Interrupts[0]
	if edited.Status != cairn.StatusPaused || string(in.Arguments) != `{"amount":7}` || len(in.Approvals) != 1 || in.Approvals[0].Actor.Name != "bob" {
		t.Fatalf("after an edit: %s %s %+v", edited.Status, in.Arguments, in.Approvals)
	}
	if in.Message != `Run tool refund with arguments {"amount":7}?` {
		t.Fatalf("after an edit the approvers read %q", in.Message)
	}
	// Ana's second look must be at the new arguments.
	if _, err := g.approve(s, one.Seq, ana); !errors.Is(err, cairn.ErrConflict) || !strings.Contains(err.Error(), "stale seq") {
		t.Fatalf("an approval made before the edit: %v", err)
	}
	if _, err := g.approve(edited, edited.Seq, bob); !errors.Is(err, cairn.ErrAlreadyApproved) {
		t.Fatalf("the editor approving again: %v", err)
	}
	done, err := g.approve(edited, edited.Seq, ana)
	if err != nil || done.Status != cairn.StatusCompleted || g.runs.Load() != 1 || g.args.Load() != 7 {
		t.Fatalf("after the edit, ana: %v, %v, %d runs with %v", err, done, g.runs.Load(), g.args.Load())
	}
}

// One rejection ends a call that needs several approvals.
func TestFourEyesOneRejectionEndsIt(t *testing.T) {
	g := newGoverned(t, 10, func(tl *cairn.Tool) { tl.Approvers = &cairn.Approvers{Count: 3} }, nil)
	s := g.start(t, person("uma", "user"))
	one, err := g.approve(s, s.Seq, person("ana", "approver"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.runner.Resume(context.Background(), s.ID, one.Seq,
		[]cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove, Remember: session.RememberSession}}, &cairn.TurnOptions{Actor: person("bob", "approver")}); !errors.Is(err, cairn.ErrInvalidRequest) {
		t.Fatalf("remembering a four-eyes approval: %v", err)
	}
	done, err := g.runner.Resume(context.Background(), s.ID, one.Seq,
		[]cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionReject, Reason: "no"}}, &cairn.TurnOptions{Actor: person("bob", "approver")})
	if err != nil || done.Status != cairn.StatusCompleted || g.runs.Load() != 0 {
		t.Fatalf("a rejection: %v, %v, %d runs", err, done, g.runs.Load())
	}
}

func TestSeparationOfDuties(t *testing.T) {
	notRequester := func(tl *cairn.Tool) { tl.Approvers = &cairn.Approvers{NotRequester: true} }
	carol := person("carol", "admin")

	g := newGoverned(t, 10, notRequester, nil)
	s := g.start(t, carol)
	if rb := s.Interrupts[0].RequestedBy; len(rb) != 1 || rb[0].Name != "carol" {
		t.Fatalf("requested_by %+v", rb)
	}
	_, err := g.approve(s, s.Seq, carol)
	g.refused(t, s, err, cairn.ErrNotAnApprover, "separation of duties")
	done, err := g.approve(s, s.Seq, person("ana", "approver"))
	if err != nil || done.Status != cairn.StatusCompleted {
		t.Fatalf("another approver: %v, %v", err, done)
	}

	// Where the configuration allows an admin override, it is recorded.
	g = newGoverned(t, 10, notRequester, &cairn.RunnerOptions{AdminOverride: true})
	s = g.start(t, carol)
	if _, err := g.approve(s, s.Seq, person("carol", "approver")); !errors.Is(err, cairn.ErrNotAnApprover) {
		t.Fatalf("an approver's own request under an admin override: %v", err)
	}
	done, err = g.approve(s, s.Seq, carol)
	if err != nil || done.Status != cairn.StatusCompleted {
		t.Fatalf("the admin's override: %v, %v", err, done)
	}
	events, err := g.runner.Events(context.Background(), s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if p, _ := session.DecodeEvent(ev); p != nil {
			if d, ok := p.(*session.DecisionMade); ok && (!d.Actor.Override || d.Actor.Name != "carol") {
				t.Fatalf("the override's actor %+v", d.Actor)
			}
		}
	}
}

// The first approval rule whose condition holds says who approves.
func TestApprovalRules(t *testing.T) {
	rules := func(tl *cairn.Tool) {
		tl.Approvers = &cairn.Approvers{Groups: []string{"finance"}}
		tl.ApprovalRules = []cairn.ApprovalRule{{
			If:        cairn.ApprovalIf(func(a refundArgs) bool { return a.Amount > 1000 }),
			Approvers: cairn.Approvers{Groups: []string{"finance-leads"}, Count: 2},
		}}
	}
	small := newGoverned(t, 10, rules, nil).start(t, person("uma", "user")).Interrupts[0]
	if small.Required != 0 || small.Approvers.Groups[0] != "finance" {
		t.Fatalf("a small refund: %+v", small.Approvers)
	}
	large := newGoverned(t, 5000, rules, nil).start(t, person("uma", "user")).Interrupts[0]
	if large.Required != 2 || large.Approvers.Groups[0] != "finance-leads" {
		t.Fatalf("a large refund: %+v", large.Approvers)
	}
}

func TestApproversNeedAnApproval(t *testing.T) {
	tool := cairn.NewTool(&cairn.Tool{Name: "refund", Approvers: &cairn.Approvers{Groups: []string{"finance"}}},
		func(ctx context.Context, a refundArgs) (string, error) { return "", nil })
	_, err := cairn.NewRunner([]*cairn.Agent{{Name: "billing", Model: scripted.New(), Tools: []*cairn.Tool{tool}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "never asks") {
		t.Fatalf("approvers on a tool that never asks: %v", err)
	}
}

// An agent's Approvers apply to its tools that name none of their own.
func TestAgentApprovers(t *testing.T) {
	restart := cairn.NewTool(&cairn.Tool{Name: "restart", Approval: cairn.Always()},
		func(ctx context.Context, a struct{}) (string, error) { return "restarted", nil })
	model := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "restart", Arguments: `{}`}}}, scripted.Reply{Text: "ok"})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: model, Tools: []*cairn.Tool{restart},
		Approvers: &cairn.Approvers{Groups: []string{"sre"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer runner.Close()
	s, err := runner.Start(context.Background(), "ops", "restart it", nil)
	if err != nil {
		t.Fatal(err)
	}
	if in := s.Interrupts[0]; in.Approvers == nil || in.Approvers.Groups[0] != "sre" {
		t.Fatalf("the agent's approvers did not reach its tool: %+v", in.Approvers)
	}
}

// Sixteen people approve at once, through two runners on one SQLite file,
// a call that needs three approvals: the tool runs once, after exactly
// three distinct approvals; each other approval is refused (the call was
// decided) and none is lost or counted twice.
func TestFourEyesConcurrentApprovals(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	var runs atomic.Int32
	runners := make([]*cairn.Runner, 2)
	for i := range runners {
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		refund := cairn.NewTool(&cairn.Tool{Name: "refund", Approval: cairn.Always(), Approvers: &cairn.Approvers{Count: 3}},
			func(ctx context.Context, a refundArgs) (string, error) {
				runs.Add(1)
				return "refunded", nil
			})
		model := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "refund", Arguments: `{"amount":5}`}}}, scripted.Reply{Text: "{{.LastResult}}"})
		runners[i], err = cairn.NewRunner([]*cairn.Agent{{Name: "billing", Model: model, Tools: []*cairn.Tool{refund}}}, &cairn.RunnerOptions{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = runners[i].Close() })
	}
	s, err := runners[0].Start(ctx, "billing", "refund", nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			_, err := runners[i%2].Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}},
				&cairn.TurnOptions{Actor: person(fmt.Sprintf("p%02d", i), "approver")})
			errs <- err
		}()
	}
	var ok, decided int
	for range 16 {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, cairn.ErrAlreadyDecided), errors.Is(err, cairn.ErrUnknownInterrupt):
			decided++
		default:
			t.Errorf("an approval failed otherwise: %v", err)
		}
	}
	events, err := runners[1].Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var added, decisions int
	people := map[string]bool{}
	for _, ev := range events {
		p, _ := session.DecodeEvent(ev)
		switch p := p.(type) {
		case *session.ApprovalAdded:
			added++
			people[p.Actor.Name] = true
		case *session.DecisionMade:
			decisions++
			people[p.Actor.Name] = true
			if len(p.Approvals) != 3 {
				t.Errorf("the decision lists %d approvals", len(p.Approvals))
			}
		}
	}
	if runs.Load() != 1 || added != 2 || decisions != 1 || len(people) != 3 || ok != 3 || decided != 13 {
		t.Fatalf("%d runs, %d approval_added, %d decisions by %d people; %d approvals answered ok, %d refused as decided", runs.Load(), added, decisions, len(people), ok, decided)
	}
}

// Tenants in the library: a session belongs to its starter's tenant; an
// actor of another tenant is told it does not exist (ErrNotFound) and
// changes nothing, a global one (AllTenants) decides it; listings for a
// Viewer hold only their tenant's sessions; turns and decisions are
// counted per tenant.
func TestTenants(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	g := newGoverned(t, 10, func(tl *cairn.Tool) { tl.Approvers = &cairn.Approvers{Groups: []string{"finance"}} },
		&cairn.RunnerOptions{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	in := func(who, tenant string) cairn.Actor {
		a := person(who, "approver", "finance")
		a.Tenant = tenant
		return a
	}
	acme := g.start(t, in("uma", "acme"))
	globex := g.start(t, in("gil", "globex"))
	if acme.Tenant != "acme" || globex.Tenant != "globex" {
		t.Fatalf("tenants %q %q", acme.Tenant, globex.Tenant)
	}
	_, err := g.approve(acme, acme.Seq, in("gil", "globex"))
	g.refused(t, acme, err, cairn.ErrNotFound, `no session "`+acme.ID+`"`)
	if err := g.runner.MayDecide(in("gil", "globex"), acme, cairn.Decision{InterruptID: acme.Interrupts[0].ID, Action: cairn.ActionApprove}); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("MayDecide for another tenant: %v", err)
	}
	for who, want := range map[string]string{"acme": acme.ID, "globex": globex.ID} {
		list, _, err := g.runner.SessionsPage(ctx, "", cairn.Page{Viewer: in("x", who)})
		inbox, _, err2 := g.runner.InterruptsPage(ctx, cairn.Page{Viewer: in("x", who)})
		if err != nil || err2 != nil || len(list) != 1 || list[0].ID != want || len(inbox) != 1 || inbox[0].SessionID != want || inbox[0].Tenant != who {
			t.Errorf("%s's listing %v and inbox %v (%v %v)", who, list, inbox, err, err2)
		}
	}
	if all, _, _ := g.runner.SessionsPage(ctx, "", cairn.Page{}); len(all) != 2 {
		t.Errorf("the program lists %d sessions, want both", len(all))
	}
	ops := cairn.Actor{Name: "ops", Subject: "ops", Role: "approver", Groups: []string{"finance"}, AllTenants: true, Via: session.ViaToken}
	if done, err := g.approve(acme, acme.Seq, ops); err != nil || done.Status != cairn.StatusCompleted {
		t.Fatalf("a global approver: %v %v", err, done)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	counted := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && (m.Name == "cairn.decisions" || m.Name == "cairn.turns") {
				for _, dp := range sum.DataPoints {
					tenant, _ := dp.Attributes.Value("tenant")
					counted[m.Name+" "+tenant.AsString()] += dp.Value
				}
			}
		}
	}
	if counted["cairn.decisions acme"] != 1 || counted["cairn.decisions globex"] != 0 || counted["cairn.turns acme"] != 2 || counted["cairn.turns globex"] != 1 {
		t.Errorf("counted per tenant: %v", counted)
	}
}
