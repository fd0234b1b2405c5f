package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/internal/testkit/hooktest"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/webhook"
)

const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// token is the part of an action link after its path.
func token(t *testing.T, link string) string {
	t.Helper()
	_, tok, ok := strings.Cut(link, cairn.ActionLinkPath)
	if !ok || !strings.HasPrefix(link, "https://cairn.example.org/") {
		t.Fatalf("action link %q is not absolute under the public URL", link)
	}
	return tok
}

func hookedRunner(t *testing.T, m *scripted.Model, opts *cairn.RunnerOptions, tools ...*cairn.Tool) *cairn.Runner {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "hooks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	opts.Store = st
	opts.PublicURL = "https://cairn.example.org"
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: m, Tools: tools}}, opts)
	return r
}

func TestWebhooksAnnounceAndActionLinksDecideOnce(t *testing.T) {
	ctx := context.Background()
	rc := hooktest.New(t, hookSecret)
	url := rc.URL
	var rec counter
	r := hookedRunner(t, deleteScript(), &cairn.RunnerOptions{Webhooks: []webhook.Subscription{{Name: "ops", URL: url, Secret: hookSecret}}}, deleteTool(&rec))
	s, err := r.Start(ctx, "main", "Delete test.txt", nil)
	if err != nil || s.Status != cairn.StatusPaused {
		t.Fatalf("%v %+v", err, s)
	}
	created := rc.WaitFor(webhook.InterruptCreated, 1, 10*time.Second)[0]
	d := created.Data
	if d.SessionID != s.ID || d.Seq != s.Seq || d.Agent != "main" || d.Interrupt == nil || d.Interrupt.ID != s.Interrupts[0].ID ||
		d.Interrupt.Message != "Delete file 'test.txt'? This cannot be undone." || d.Actions == nil || d.Actions.Approve == "" || d.Actions.Reject == "" {
		t.Fatalf("interrupt.created = %+v", d)
	}
	approve, reject := token(t, d.Actions.Approve), token(t, d.Actions.Reject)

	// An altered link decides nothing.
	forged := approve[:len(approve)-3] + "AAA"
	if _, err := r.FollowActionLink(ctx, forged, "", nil); !errors.Is(err, cairn.ErrInvalidLink) {
		t.Fatalf("forged link: %v, want ErrInvalidLink", err)
	}
	link, err := r.ReadActionLink(ctx, approve)
	if err != nil || link.SessionID != s.ID || link.Action != cairn.ActionApprove || link.Endpoint != "ops" {
		t.Fatalf("ReadActionLink = %+v, %v", link, err)
	}

	s, err = r.FollowActionLink(ctx, approve, "", nil)
	if err != nil || s.Status != cairn.StatusCompleted || len(rec.runs()) != 1 {
		t.Fatalf("follow approve: %v %+v runs %v", err, s, rec.runs())
	}
	for _, tok := range []string{approve, reject} {
		if _, err := r.FollowActionLink(ctx, tok, "", nil); !errors.Is(err, cairn.ErrConflict) {
			t.Fatalf("link used after the decision: %v, want ErrConflict", err)
		}
	}
	if len(rec.runs()) != 1 {
		t.Fatalf("the tool ran %d times", len(rec.runs()))
	}
	decided := rc.WaitFor(webhook.InterruptDecided, 1, 10*time.Second)[0]
	dec := decided.Data.Decision
	if dec == nil || dec.InterruptID != link.InterruptID || dec.Action != cairn.ActionApprove || !reflect.DeepEqual(dec.Actor, cairn.Actor{Name: "ops", Role: "action-link", Subject: "action_link:ops", Via: cairn.ViaActionLink}) {
		t.Fatalf("interrupt.decided = %+v", dec)
	}
	if done := rc.WaitFor(webhook.SessionCompleted, 1, 10*time.Second)[0]; done.Data.Output != "Result: Deleted test.txt" || done.Data.SessionID != s.ID {
		t.Fatalf("session.completed = %+v", done.Data)
	}
}

// A batch of two pauses once with two interrupt.created; deciding one
// pauses again on the other without announcing it again. An endpoint hears
// only the events it lists.
func TestWebhooksAnnounceEachInterruptOnce(t *testing.T) {
	ctx := context.Background()
	all := hooktest.New(t, hookSecret)
	allURL := all.URL
	ends := hooktest.New(t, hookSecret)
	endsURL := ends.URL
	var rec counter
	m := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "delete_file", Arguments: `{"filename":"a.txt"}`}, {Name: "delete_file", Arguments: `{"filename":"b.txt"}`}}},
		scripted.Reply{Text: "done"},
	)
	r := hookedRunner(t, m, &cairn.RunnerOptions{Webhooks: []webhook.Subscription{
		{URL: allURL, Secret: hookSecret},
		{Name: "ends", URL: endsURL, Secret: hookSecret, Events: []webhook.EventType{webhook.SessionCompleted}},
	}}, deleteTool(&rec))
	if _, err := r.Start(ctx, "main", "delete two", nil); err != nil {
		t.Fatal(err)
	}
	created := all.WaitFor(webhook.InterruptCreated, 2, 10*time.Second)
	if strings.Contains(string(created[0].Data.Interrupt.Arguments), "b.txt") { // deliveries may arrive in any order
		created[0], created[1] = created[1], created[0]
	}
	s, err := r.FollowActionLink(ctx, token(t, created[0].Data.Actions.Reject), "not that one", nil)
	if err != nil || s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 {
		t.Fatalf("after rejecting one: %v %+v", err, s)
	}
	s, err = r.FollowActionLink(ctx, token(t, created[1].Data.Actions.Approve), "", nil)
	if err != nil || s.Status != cairn.StatusCompleted {
		t.Fatalf("after approving the other: %v %+v", err, s)
	}
	all.WaitFor(webhook.SessionCompleted, 1, 10*time.Second)
	ends.WaitFor(webhook.SessionCompleted, 1, 10*time.Second)
	if n := len(all.WaitFor(webhook.InterruptCreated, 0, 10*time.Second)); n != 2 {
		t.Fatalf("%d interrupt.created, want 2 (the second pause announces nothing new)", n)
	}
	if n := len(all.WaitFor(webhook.InterruptDecided, 2, 10*time.Second)); n != 2 {
		t.Fatalf("%d interrupt.decided", n)
	}
	if n := ends.Len(); n != 1 {
		t.Fatalf("the endpoint listing only session.completed got %d deliveries", n)
	}
	if got := rec.runs(); len(got) != 1 || got[0] != "b.txt" {
		t.Fatalf("runs %v", got)
	}
}

// An approval that expires is announced as interrupt.expired, and its
// links answer ErrExpired.
func TestWebhooksAnnounceExpiry(t *testing.T) {
	ctx := context.Background()
	rc := hooktest.New(t, hookSecret)
	url := rc.URL
	clk := newClock()
	var rec counter
	tool := deleteTool(&rec)
	tool.ApprovalTTL = time.Minute
	r := hookedRunner(t, deleteScript(), &cairn.RunnerOptions{Now: clk.now, ExpirySweep: -1,
		Webhooks: []webhook.Subscription{{URL: url, Secret: hookSecret}}, WebhookDelivery: &webhook.Options{Poll: 20 * time.Millisecond}}, tool)
	if _, err := r.Start(ctx, "main", "Delete test.txt", nil); err != nil {
		t.Fatal(err)
	}
	created := rc.WaitFor(webhook.InterruptCreated, 1, 10*time.Second)[0]
	clk.add(2 * time.Minute)
	if _, err := r.FollowActionLink(ctx, token(t, created.Data.Actions.Approve), "", nil); !errors.Is(err, cairn.ErrExpired) {
		t.Fatalf("expired link: %v, want ErrExpired", err)
	}
	if n, err := r.ExpireDue(ctx); n != 1 || err != nil {
		t.Fatalf("ExpireDue = %d, %v", n, err)
	}
	expired := rc.WaitFor(webhook.InterruptExpired, 1, 10*time.Second)[0]
	if d := expired.Data.Decision; d == nil || d.Reason != "approval expired" || len(rec.runs()) != 0 {
		t.Fatalf("interrupt.expired = %+v, runs %v", d, rec.runs())
	}
}

func TestWebhookOptionsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		opts cairn.RunnerOptions
		want string
	}{
		{cairn.RunnerOptions{Webhooks: []webhook.Subscription{{URL: "https://h.example/x", Secret: hookSecret}}}, "PublicURL"},
		{cairn.RunnerOptions{PublicURL: "https://c.example", Webhooks: []webhook.Subscription{{URL: "https://h.example/x", Secret: hookSecret, Events: []webhook.EventType{"interrupt.made"}}}}, `unknown event "interrupt.made"`},
		{cairn.RunnerOptions{PublicURL: "https://c.example", Webhooks: []webhook.Subscription{{URL: "https://h.example/x", Secret: "nope!"}}}, "not whsec_"},
	} {
		_, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: deleteScript()}}, &tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// A review is announced like any interrupt, with the proposed answer and
// links: its reject link sends the answer back with the reason, and the
// model answers again.
func TestWebhooksAnnounceAReview(t *testing.T) {
	ctx := context.Background()
	rc := hooktest.New(t, hookSecret)
	answers := []string{`{"priority":"low"}`, `{"priority":"high"}`}
	var calls int
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		calls++
		return &model.Response{Message: model.Message{Content: answers[min(calls, 2)-1]}}, nil
	})
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "hooks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := runnerFor(t, []*cairn.Agent{{Name: "triage", Model: m, Review: cairn.Always(),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"priority":{"enum":["low","high"]}}}`)}},
		&cairn.RunnerOptions{Store: st, PublicURL: "https://cairn.example.org", Webhooks: []webhook.Subscription{{Name: "ops", URL: rc.URL, Secret: hookSecret}}})
	s := check.NoErr(t)(r.Start(ctx, "triage", "disk alert", nil))
	d := rc.WaitFor(webhook.InterruptCreated, 1, 10*time.Second)[0].Data
	if d.SessionID != s.ID || d.Interrupt == nil || d.Interrupt.Kind != cairn.KindReview || string(d.Interrupt.Output) != `{"priority":"low"}` || d.Actions == nil || d.Actions.Reject == "" {
		t.Fatalf("interrupt.created = %+v", d)
	}
	s = check.NoErr(t)(r.FollowActionLink(ctx, token(t, d.Actions.Reject), "a disk at 95% is high", nil))
	if s.Status != cairn.StatusPaused || string(s.Interrupts[0].Output) != `{"priority":"high"}` || calls != 2 {
		t.Fatalf("after the reject link: %+v (%d calls)", s, calls)
	}
	dec := rc.WaitFor(webhook.InterruptDecided, 1, 10*time.Second)[0].Data.Decision
	if dec == nil || dec.Kind != cairn.KindReview || dec.Action != cairn.ActionReject || dec.Reason != "a disk at 95% is high" {
		t.Fatalf("interrupt.decided = %+v", dec)
	}
}

// Other systems can wait on Cairn too: a call that waits on a system is
// announced (interrupt.created, kind external, no action links), its
// completion is interrupt.completed, and a missed deadline
// interrupt.expired with its outcome.
func TestWebhooksAnnounceWaitsOnSystems(t *testing.T) {
	ctx := context.Background()
	rc := hooktest.New(t, hookSecret)
	var mu sync.Mutex
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	urls := make(chan string, 2)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "hooks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := newBrain(func(req *model.Request) model.Message {
		if l := last(req); l.Role == model.RoleTool {
			return text("CI: " + l.Content)
		}
		return call("c1", "run_pipeline", `{"ref":"main"}`)
	})
	r := runnerFor(t, []*cairn.Agent{{Name: "ci", Model: m, Tools: []*cairn.Tool{pipelineTool(func(u string) { urls <- u }, &cairn.Wait{Timeout: time.Hour})}}},
		&cairn.RunnerOptions{Store: st, Now: clock, ExpirySweep: -1, PublicURL: "https://cairn.example.org", Webhooks: []webhook.Subscription{{Name: "ops", URL: rc.URL, Secret: hookSecret}}})

	first := check.NoErr(t)(r.Start(ctx, "ci", "ship main", nil))
	created := rc.WaitForSession(webhook.InterruptCreated, first.ID, 10*time.Second).Data
	if created.Interrupt == nil || created.Interrupt.Kind != cairn.KindExternal || created.Interrupt.Handle != "run-42" || created.Actions != nil {
		t.Fatalf("interrupt.created = %+v", created)
	}
	url := <-urls
	check.NoErr(t)(r.Callback(ctx, url[strings.LastIndex(url, "/")+1:], cairn.Completion{Output: json.RawMessage(`{"status":"passed"}`)}))
	done := rc.WaitForSession(webhook.InterruptCompleted, first.ID, 10*time.Second).Data.Decision
	if done == nil || done.Action != cairn.ActionComplete || string(done.Output) != `{"status":"passed"}` || done.Actor.Role != "callback" {
		t.Fatalf("interrupt.completed = %+v", done)
	}

	second := check.NoErr(t)(r.Start(ctx, "ci", "ship main again", nil))
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	if n, err := r.ExpireDue(ctx); n != 1 || err != nil {
		t.Fatalf("expire: %d %v", n, err)
	}
	wait := rc.WaitForSession(webhook.InterruptExpired, second.ID, 10*time.Second).Data.Wait
	if wait == nil || wait.Outcome != cairn.OnTimeoutError || wait.Tool != "run_pipeline" || wait.InterruptID != second.Interrupts[0].ID {
		t.Fatalf("interrupt.expired = %+v", wait)
	}
}

// Action links go only to the receivers that speak for an approver group
// of the interrupt, say which groups they speak for, and decide as the
// receiver with its groups; a person signed in to follow one decides as
// themselves, checked as such.
func TestActionLinksSpeakForTheirGroups(t *testing.T) {
	ctx := context.Background()
	finance, ops := hooktest.New(t, hookSecret), hooktest.New(t, hookSecret)
	var rec counter
	tool := deleteTool(&rec)
	tool.Approvers = &cairn.Approvers{Groups: []string{"finance"}}
	r := hookedRunner(t, deleteScript(), &cairn.RunnerOptions{Webhooks: []webhook.Subscription{
		{Name: "finance-room", URL: finance.URL, Secret: hookSecret, Groups: []string{"finance"}},
		{Name: "ops-room", URL: ops.URL, Secret: hookSecret},
	}}, tool)
	s, err := r.Start(ctx, "main", "Delete test.txt", nil)
	if err != nil || s.Status != cairn.StatusPaused {
		t.Fatalf("%v %+v", err, s)
	}
	toFinance := finance.WaitFor(webhook.InterruptCreated, 1, 10*time.Second)[0].Data
	toOps := ops.WaitFor(webhook.InterruptCreated, 1, 10*time.Second)[0].Data
	if toOps.Actions != nil {
		t.Fatalf("the ops room, which speaks for no approver group, got links: %+v", toOps.Actions)
	}
	if toFinance.Actions == nil || toFinance.Actions.Approve == "" || !reflect.DeepEqual(toFinance.Actions.SpeaksFor, []string{"finance"}) {
		t.Fatalf("the finance room's links: %+v", toFinance.Actions)
	}
	approve := token(t, toFinance.Actions.Approve)
	// Someone signed in who is not in finance cannot use the link.
	dev := cairn.Actor{Name: "dev", Subject: "dev", Role: "approver", Groups: []string{"dev"}, Via: cairn.ViaToken}
	if _, err := r.FollowActionLink(ctx, approve, "", &cairn.TurnOptions{Actor: dev}); !errors.Is(err, cairn.ErrNotAnApprover) {
		t.Fatalf("a signed-in person outside finance following the link: %v", err)
	}
	ana := cairn.Actor{Name: "ana", Subject: "ana", Role: "approver", Groups: []string{"finance"}, Via: cairn.ViaToken}
	done, err := r.FollowActionLink(ctx, approve, "", &cairn.TurnOptions{Actor: ana})
	if err != nil || done.Status != cairn.StatusCompleted || len(rec.runs()) != 1 {
		t.Fatalf("ana following the link: %v %+v", err, done)
	}
	dec := finance.WaitFor(webhook.InterruptDecided, 1, 10*time.Second)[0].Data.Decision
	if dec == nil || dec.Actor.Name != "ana" || dec.Actor.Via != cairn.ViaToken {
		t.Fatalf("the decision records %+v, want ana", dec)
	}

	// Followed by no one signed in, the link decides as its receiver, with
	// its groups.
	s, err = r.Start(ctx, "main", "Delete test.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	var next *webhook.Payload
	for _, p := range finance.WaitFor(webhook.InterruptCreated, 2, 10*time.Second) {
		if p.Data.SessionID == s.ID {
			next = &p
		}
	}
	if next == nil || next.Data.Actions == nil {
		t.Fatal("no links for the second session")
	}
	if _, err := r.FollowActionLink(ctx, token(t, next.Data.Actions.Approve), "", nil); err != nil {
		t.Fatalf("the finance room's link: %v", err)
	}
	evs, err := r.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == cairn.EventDecision && !strings.Contains(string(ev.Data), `"actor":{"name":"finance-room","role":"action-link","subject":"action_link:finance-room","groups":["finance"],"via":"action_link"}`) {
			t.Fatalf("the link's decision: %s", ev.Data)
		}
	}
}

// A reminder goes to whoever may decide, with links; an escalation adds
// finance-leads, whose room gets links only then; each once, on the
// sweep that finds it due.
func TestWebhooksAnnounceRemindersAndEscalations(t *testing.T) {
	ctx := context.Background()
	finance, leads := hooktest.New(t, hookSecret), hooktest.New(t, hookSecret)
	clk := newClock()
	var rec counter
	tool := deleteTool(&rec)
	tool.Approvers = &cairn.Approvers{Groups: []string{"finance"}}
	tool.ApprovalTTL = time.Hour
	tool.Escalation = &cairn.Escalation{Steps: []cairn.EscalationStep{
		{After: 10 * time.Minute, Remind: true},
		{BeforeExpiry: 10 * time.Minute, EscalateTo: []string{"finance-leads"}},
	}}
	r := hookedRunner(t, deleteScript(), &cairn.RunnerOptions{Now: clk.now, ExpirySweep: -1, WebhookDelivery: &webhook.Options{Poll: 20 * time.Millisecond},
		Webhooks: []webhook.Subscription{
			{Name: "finance-room", URL: finance.URL, Secret: hookSecret, Groups: []string{"finance"}},
			{Name: "leads-room", URL: leads.URL, Secret: hookSecret, Groups: []string{"finance-leads"}},
		}}, tool)
	s, err := r.Start(ctx, "main", "Delete test.txt", nil)
	if err != nil || s.Status != cairn.StatusPaused {
		t.Fatalf("%v %+v", err, s)
	}
	if d := leads.WaitFor(webhook.InterruptCreated, 1, 10*time.Second)[0].Data; d.Actions != nil {
		t.Fatalf("finance-leads got links before the escalation: %+v", d.Actions)
	}
	clk.add(10 * time.Minute)
	if n, err := r.ExpireDue(ctx); n != 1 || err != nil {
		t.Fatalf("ExpireDue = %d, %v", n, err)
	}
	reminder := finance.WaitFor(webhook.InterruptReminder, 1, 10*time.Second)[0].Data
	if reminder.Actions == nil || reminder.Actions.Approve == "" || reminder.Escalation == nil || reminder.Escalation.Rule != "tool delete_file escalation[0]" ||
		reminder.Interrupt == nil || reminder.Interrupt.Schedule[0].FiredAt == nil {
		t.Fatalf("the reminder: %+v", reminder)
	}
	clk.add(40 * time.Minute)
	if n, err := r.ExpireDue(ctx); n != 1 || err != nil {
		t.Fatalf("ExpireDue = %d, %v", n, err)
	}
	escalated := leads.WaitFor(webhook.InterruptEscalated, 1, 10*time.Second)[0].Data
	if escalated.Actions == nil || escalated.Actions.Approve == "" || !reflect.DeepEqual(escalated.Escalation.EscalateTo, []string{"finance-leads"}) ||
		!reflect.DeepEqual(escalated.Interrupt.Approvers.Groups, []string{"finance", "finance-leads"}) {
		t.Fatalf("the escalation: %+v", escalated)
	}
	// A finance lead approves with the escalation's link.
	done, err := r.FollowActionLink(ctx, token(t, escalated.Actions.Approve), "", nil)
	if err != nil || done.Status != cairn.StatusCompleted || len(rec.runs()) != 1 {
		t.Fatalf("the lead's link: %v %+v", err, done)
	}
	if got := len(finance.WaitFor(webhook.InterruptReminder, 1, time.Second)) + len(leads.WaitFor(webhook.InterruptEscalated, 1, time.Second)); got != 2 {
		t.Fatalf("%d reminders and escalations delivered, want one each", got)
	}
}

// A fork announces what it waits for, with links of its own that decide
// the fork and not the original; the history it copied is not announced
// again (no second session.completed, no decision of the past).
func TestForkAnnouncesOnlyWhatItWaitsFor(t *testing.T) {
	ctx := context.Background()
	rc := hooktest.New(t, hookSecret)
	var rec counter
	r := hookedRunner(t, deleteScript(), &cairn.RunnerOptions{Webhooks: []webhook.Subscription{{Name: "ops", URL: rc.URL, Secret: hookSecret}}}, deleteTool(&rec))
	s, err := r.Start(ctx, "main", "Delete test.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	paused := s.Seq
	rc.WaitFor(webhook.InterruptCreated, 1, 10*time.Second)
	if s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil); err != nil || s.Status != cairn.StatusCompleted {
		t.Fatalf("approve: %v %+v", err, s)
	}
	rc.WaitFor(webhook.SessionCompleted, 1, 10*time.Second)
	fork, err := r.Fork(ctx, s.ID, paused, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := rc.WaitForSession(webhook.InterruptCreated, fork.ID, 10*time.Second)
	if p.Data.Interrupt == nil || p.Data.Interrupt.ID != fork.Interrupts[0].ID || p.Data.Actions == nil || p.Data.Seq != fork.Seq {
		t.Fatalf("the fork's interrupt.created: %+v", p.Data)
	}
	done, err := r.FollowActionLink(ctx, token(t, p.Data.Actions.Reject), "not twice", nil)
	if err != nil || done.ID != fork.ID || done.Status != cairn.StatusCompleted || len(rec.runs()) != 1 {
		t.Fatalf("the fork's reject link: %v %+v, %d runs", err, done, len(rec.runs()))
	}
	rc.WaitFor(webhook.SessionCompleted, 2, 10*time.Second) // the fork's own end
	for typ, want := range map[webhook.EventType]int{webhook.InterruptCreated: 2, webhook.InterruptDecided: 2, webhook.SessionCompleted: 2} {
		if got := len(rc.Payloads(typ)); got != want {
			t.Errorf("%s: %d deliveries, want %d (the copied history announced again?)", typ, got, want)
		}
	}
}
