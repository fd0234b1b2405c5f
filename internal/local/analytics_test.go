package local_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store/sqlite"
)

// The analytics' figures match a count made apart, from the sessions'
// event logs: per tool and per approver, decisions, approvals, rejections,
// edits, standing rules' decisions, the time people took (median, 90th
// percentile), fast approvals and the longest streak; a time range counts
// only its decisions.
func TestAnalyticsMatchTheEventLog(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	tick := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tool := func(name string) *cairn.Tool {
		return &cairn.Tool{Name: name, Description: name, Approval: cairn.Always(),
			Parameters: json.RawMessage(`{"type":"object","properties":{"env":{"type":"string"}}}`),
			Handler:    func(ctx context.Context, _ json.RawMessage) (string, error) { return "done", nil }}
	}
	script := func(name string) *scripted.Model {
		return scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: name, Arguments: `{"env":"{{.Input}}"}`}}}, scripted.Reply{Text: "{{.LastResult}}"})
	}
	r := runnerFor(t, []*cairn.Agent{
		{Name: "ops", Model: script("deploy"), Tools: []*cairn.Tool{tool("deploy")}},
		{Name: "db", Model: script("wipe"), Tools: []*cairn.Tool{tool("wipe")}},
	}, &cairn.RunnerOptions{Store: st, Now: clock})
	people := []cairn.Actor{
		{Name: "ana", Subject: "ana", Role: session.RoleApprover, Via: session.ViaToken},
		{Name: "bo", Subject: "bo", Role: session.RoleApprover, Via: session.ViaToken},
		{Name: "cy", Subject: "cy", Role: session.RoleApprover, Via: session.ViaToken},
	}
	type step struct {
		agent, env string
		wait       time.Duration
		d          cairn.Decision
		who        int
	}
	approve, reject := cairn.Decision{Action: cairn.ActionApprove}, cairn.Decision{Action: cairn.ActionReject, Reason: "no"}
	edit := cairn.Decision{Action: cairn.ActionApprove, Arguments: []byte(`{"env":"qa"}`)}
	grant := cairn.Decision{Action: cairn.ActionApprove, Rule: &cairn.RuleGrant{If: `args.env == "lab"`}}
	var plan []step
	for i := range 30 {
		plan = append(plan, step{"ops", "staging", time.Duration(1+i%7) * time.Second, approve, i % 3})
	}
	plan = append(plan, step{"ops", "prod", 40 * time.Second, reject, 0}, step{"ops", "prod", 3 * time.Minute, edit, 1},
		step{"db", "x", 2 * time.Second, approve, 2}, step{"db", "x", 10 * time.Minute, reject, 2}, step{"db", "lab", 4 * time.Second, grant, 0})
	for _, p := range plan {
		s := check.NoErr(t)(r.Start(ctx, p.agent, p.env, nil))
		tick(p.wait)
		d := p.d
		d.InterruptID = s.Interrupts[0].ID
		check.NoErr(t)(r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{d}, &cairn.TurnOptions{Actor: people[p.who]}))
		tick(time.Minute)
	}
	middle := clock()
	for range 3 { // decided by the standing rule: no pause
		if s := check.NoErr(t)(r.Start(ctx, "db", "lab", nil)); s.Status != cairn.StatusCompleted {
			t.Fatalf("the rule's call: %+v", s)
		}
		tick(time.Minute)
	}
	check.NoErr(t)(r.Start(ctx, "ops", "pending", nil)) // one waiting

	// The count made apart: every session's log.
	type count struct {
		decisions, approved, rejected, edited, byRule, fast, streak, run, pending int
		waits                                                                     []time.Duration
	}
	counts := func(by string, since time.Time) map[string]*count {
		out := map[string]*count{}
		sessions, _, err := r.SessionsPage(ctx, "", cairn.Page{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(sessions, func(a, b *cairn.Session) int { return a.CreatedAt.Compare(b.CreatedAt) })
		for _, s := range sessions {
			asked := map[string]time.Time{}
			for _, ev := range check.Events(t)(r.Events(ctx, s.ID, 0)) {
				var d struct {
					Interrupt struct{ ID string } `json:"interrupt"`
					session.DecisionMade
				}
				_ = json.Unmarshal(ev.Data, &d)
				if ev.Type == session.EventApprovalRequested {
					asked[d.Interrupt.ID] = ev.Time
					continue
				}
				if ev.Type != session.EventDecision {
					continue
				}
				if ev.Time.Before(since) {
					continue
				}
				key := map[string]string{"tool": d.Tool, "approver": d.Actor.Name}[by]
				if by == "approver" && d.Rule != "" {
					continue
				}
				c := out[key]
				if c == nil {
					c = &count{}
					out[key] = c
				}
				c.decisions++
				if d.Action == cairn.ActionApprove {
					c.approved++
				} else {
					c.rejected++
				}
				edited := len(d.NewArgs) > 0
				if edited {
					c.edited++
				}
				if d.Rule != "" {
					c.byRule++
					continue
				}
				w := ev.Time.Sub(asked[d.InterruptID])
				c.waits = append(c.waits, w)
				if d.Action == cairn.ActionApprove && !edited {
					c.run++
					c.streak = max(c.streak, c.run)
					if w < 5*time.Second {
						c.fast++
					}
				} else {
					c.run = 0
				}
			}
			if by == "tool" {
				for _, in := range s.Interrupts {
					if out[in.Tool] == nil {
						out[in.Tool] = &count{}
					}
					out[in.Tool].pending++
				}
			}
		}
		return out
	}
	rank := func(ws []time.Duration, q float64) int64 {
		if len(ws) == 0 {
			return 0
		}
		s := slices.Clone(ws)
		slices.Sort(s)
		i := 0
		for i < len(s)-1 && float64(i+1) < q*float64(len(s)) {
			i++
		}
		return s[i].Milliseconds()
	}
	admin := cairn.Actor{Name: "root", Role: session.RoleAdmin, Via: session.ViaToken}
	for _, c := range []struct {
		by    cairn.AnalyticsBy
		since time.Time
	}{{cairn.ByTool, time.Time{}}, {cairn.ByApprover, time.Time{}}, {cairn.ByTool, middle}} {
		a, err := r.Analytics(ctx, admin, cairn.AnalyticsQuery{By: c.by, Since: c.since})
		if err != nil {
			t.Fatal(err)
		}
		want := counts(string(c.by), c.since)
		if len(a.Rows) != len(want) {
			t.Fatalf("by %s since %v: rows %+v, want keys of %v", c.by, c.since, a.Rows, want)
		}
		for _, row := range a.Rows {
			w := want[row.Key]
			got := [...]int{row.Decisions, row.Approved, row.Rejected, row.Edited, row.ByRule, row.FastApprovals, row.LongestStreak, row.Pending}
			exp := [...]int{w.decisions, w.approved, w.rejected, w.edited, w.byRule, w.fast, w.streak, w.pending}
			if got != exp || row.TimeToDecision.P50 != rank(w.waits, 0.5) || row.TimeToDecision.P90 != rank(w.waits, 0.9) {
				t.Errorf("by %s since %v, %s: %v p50 %d p90 %d, the log says %v p50 %d p90 %d", c.by, c.since, row.Key, got,
					row.TimeToDecision.P50, row.TimeToDecision.P90, exp, rank(w.waits, 0.5), rank(w.waits, 0.9))
			}
		}
	}
	// The figures are not trivial: the plan has each kind of decision.
	a, _ := r.Analytics(ctx, admin, cairn.AnalyticsQuery{})
	var total cairn.AnalyticsRow
	for _, row := range a.Rows {
		total.Decisions += row.Decisions
		total.ByRule += row.ByRule
		total.Edited += row.Edited
		total.Pending += row.Pending
		total.FastApprovals += row.FastApprovals
	}
	if total.Decisions != len(plan)+3 || total.ByRule != 3 || total.Edited != 1 || total.Pending != 1 || total.FastApprovals == 0 {
		t.Fatalf("totals %+v", total)
	}
	if _, err := r.Analytics(ctx, cairn.Actor{Name: "u", Role: session.RoleUser, Via: session.ViaToken}, cairn.AnalyticsQuery{}); err == nil {
		t.Fatal("a user read the analytics")
	}
}
