package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/store/sqlite"
)

// bulkRunners are n runners on one SQLite file (replicas), whose agent
// "ops" calls deploy (every call asks; sre approves) and, for the input
// "two", deploy and notify in one message; runs counts each call that ran.
func bulkRunners(t *testing.T, n int, runs *sync.Map, now func() time.Time) []*cairn.Runner {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.db")
	var out []*cairn.Runner
	for range n {
		st, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		tool := func(name string) *cairn.Tool {
			return cairn.NewTool(&cairn.Tool{Name: name, Approval: cairn.Always(), ApprovalTTL: time.Hour, Approvers: &cairn.Approvers{Groups: []string{"sre"}}},
				func(ctx context.Context, a struct {
					N string `json:"n"`
				}) (string, error) {
					v, _ := runs.LoadOrStore(name+":"+a.N, new(atomic.Int32))
					v.(*atomic.Int32).Add(1) // each key is one call: counted once if it ran once
					return "ok", nil
				})
		}
		brain := newBrain(func(req *model.Request) model.Message {
			if last(req).Role == model.RoleTool {
				return text("done")
			}
			in := last(req).Content
			if strings.HasPrefix(in, "two ") {
				return model.Message{ToolCalls: []model.ToolCall{{ID: "c1", Name: "deploy", Arguments: fmt.Sprintf(`{"n":%q}`, in)}, {ID: "c2", Name: "notify", Arguments: fmt.Sprintf(`{"n":%q}`, in)}}}
			}
			return call("c1", "deploy", fmt.Sprintf(`{"n":%q}`, in))
		})
		out = append(out, runnerFor(t, []*cairn.Agent{{Name: "ops", Model: brain, Tools: []*cairn.Tool{tool("deploy"), tool("notify")}}},
			&cairn.RunnerOptions{Store: st, Now: now, ExpirySweep: -1}))
	}
	return out
}

var (
	ana = cairn.Actor{Name: "ana", Role: "approver", Groups: []string{"sre"}, Via: cairn.ViaToken}
	bob = cairn.Actor{Name: "bob", Role: "approver", Groups: []string{"finance"}, Via: cairn.ViaToken}
)

// Many calls across sessions decided by two overlapping bulk requests and
// single decisions at once, on three runners sharing a store: each call
// decided once and run once, every result saying what happened to it, the
// bulk decisions' events carrying their batch.
func TestDecideManyOverlapping(t *testing.T) {
	ctx := context.Background()
	var runs sync.Map
	rs := bulkRunners(t, 3, &runs, nil)
	const n = 40
	var all []cairn.BulkDecision
	for i := range n {
		s, err := rs[i%3].Start(ctx, "ops", fmt.Sprint("call ", i), nil)
		if err != nil || s.Status != cairn.StatusPaused {
			t.Fatalf("start %d: %v %+v", i, err, s)
		}
		all = append(all, cairn.BulkDecision{SessionID: s.ID, Decision: cairn.Decision{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}})
	}
	var wg sync.WaitGroup
	var bySelect, byList *cairn.BulkResponse
	singles := make([]error, n)
	wg.Add(3)
	go func() {
		defer wg.Done()
		var err error
		if bySelect, err = rs[0].DecideMany(ctx, cairn.BulkRequest{Select: &cairn.Selector{Tool: "deploy"}, Action: cairn.ActionApprove, Limit: n}, &cairn.TurnOptions{Actor: ana}); err != nil {
			t.Error(err)
		}
	}()
	go func() {
		defer wg.Done()
		var err error
		if byList, err = rs[1].DecideMany(ctx, cairn.BulkRequest{Decisions: all}, &cairn.TurnOptions{Actor: ana}); err != nil {
			t.Error(err)
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < n; i += 3 {
			s, err := rs[2].Session(ctx, all[i].SessionID)
			if err == nil {
				_, err = rs[2].Resume(ctx, s.ID, s.Seq, []cairn.Decision{all[i].Decision}, &cairn.TurnOptions{Actor: ana})
			}
			singles[i] = err
		}
	}()
	wg.Wait()
	if bySelect == nil || byList == nil {
		t.FailNow()
	}
	decided := map[string]int{}
	for _, resp := range []*cairn.BulkResponse{bySelect, byList} {
		for _, r := range resp.Results {
			switch {
			case r.Status == 200:
				decided[r.SessionID]++
			case r.Status == 409 && r.Error != nil && r.Error.Code == "already_decided" && strings.Contains(r.Error.Message, "already decided: approve by ana"):
			default:
				t.Errorf("result %+v", r)
			}
		}
	}
	for i, err := range singles {
		switch {
		case i%3 != 0:
		case err == nil:
			decided[all[i].SessionID]++
		case !errors.Is(err, cairn.ErrConflict):
			t.Errorf("single decision %d: %v", i, err)
		}
	}
	for _, d := range all {
		s, err := rs[0].Session(ctx, d.SessionID)
		if err != nil || s.Status != cairn.StatusCompleted || decided[d.SessionID] != 1 {
			t.Errorf("session %s: %v, %s, decided %d times", d.SessionID, err, s.Status, decided[d.SessionID])
		}
		evs, _ := rs[0].Events(ctx, d.SessionID, 0)
		decisions := 0
		for _, ev := range evs {
			if ev.Type == cairn.EventDecision {
				decisions++
				var p struct{ Batch string }
				_ = json.Unmarshal(ev.Data, &p)
				if p.Batch != "" && p.Batch != bySelect.Batch && p.Batch != byList.Batch {
					t.Errorf("decision of %s names batch %q", d.SessionID, p.Batch)
				}
			}
		}
		if decisions != 1 {
			t.Errorf("session %s has %d decision events", d.SessionID, decisions)
		}
	}
	count := 0
	runs.Range(func(k, v any) bool {
		if n := v.(*atomic.Int32).Load(); n != 1 {
			t.Errorf("%s ran %d times", k, n)
		}
		count++
		return true
	})
	if count != n || bySelect.Batch == byList.Batch {
		t.Fatalf("%d calls ran, want %d; batches %s %s", count, n, bySelect.Batch, byList.Batch)
	}
}

// One call's failure is its own result: a call its decider may not
// approve (403), an expired one (410), a missing session (404), bad
// arguments (400); a selector picks only what its actor may decide; two
// calls of one session in one list are both decided; a malformed request
// is refused whole.
func TestDecideManyResults(t *testing.T) {
	ctx := context.Background()
	var runs sync.Map
	var mu sync.Mutex
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	r := bulkRunners(t, 1, &runs, clock)[0]
	old, _ := r.Start(ctx, "ops", "old", nil)
	mu.Lock()
	now = now.Add(2 * time.Hour) // old's approval expired
	mu.Unlock()
	two, _ := r.Start(ctx, "ops", "two calls", nil)
	one, _ := r.Start(ctx, "ops", "one", nil)
	gone, _ := r.Start(ctx, "ops", "gone", nil)
	if _, err := r.Cancel(ctx, gone.ID, cairn.CancelAll, nil); err != nil {
		t.Fatal(err)
	}
	if len(two.Interrupts) != 2 {
		t.Fatalf("two: %+v", two.Interrupts)
	}
	list := []cairn.BulkDecision{
		{SessionID: two.ID, Decision: cairn.Decision{InterruptID: two.Interrupts[0].ID, Action: cairn.ActionApprove}},
		{SessionID: two.ID, Decision: cairn.Decision{InterruptID: two.Interrupts[1].ID, Action: cairn.ActionReject, Reason: "no"}},
		{SessionID: old.ID, Decision: cairn.Decision{InterruptID: old.Interrupts[0].ID, Action: cairn.ActionApprove}},
		{SessionID: "ses_missing", Decision: cairn.Decision{InterruptID: "int_x", Action: cairn.ActionApprove}},
		{SessionID: one.ID, Decision: cairn.Decision{InterruptID: one.Interrupts[0].ID, Action: cairn.ActionApprove, Arguments: json.RawMessage(`{"n":5}`)}},
		{SessionID: gone.ID, Decision: cairn.Decision{InterruptID: gone.Interrupts[0].ID, Action: cairn.ActionApprove}},
	}
	// bob is in finance: every call here is sre's. A selector skips them.
	if got, err := r.DecideMany(ctx, cairn.BulkRequest{Select: &cairn.Selector{}, Action: cairn.ActionApprove}, &cairn.TurnOptions{Actor: bob}); err != nil || len(got.Results) != 0 {
		t.Fatalf("bob's selector: %v %+v", err, got)
	}
	got, err := r.DecideMany(ctx, cairn.BulkRequest{Decisions: list[:1]}, &cairn.TurnOptions{Actor: bob})
	if err != nil || got.Results[0].Status != 403 || got.Results[0].Error.Code != "not_an_approver" {
		t.Fatalf("bob's list: %v %+v", err, got)
	}
	got, err = r.DecideMany(ctx, cairn.BulkRequest{Decisions: list}, &cairn.TurnOptions{Actor: ana})
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for _, res := range got.Results {
		s := fmt.Sprint(res.Status)
		if res.Error != nil {
			s += " " + string(res.Error.Code)
		}
		statuses = append(statuses, s)
	}
	if want := "200 200 410 expired 404 not_found 400 invalid_arguments 409 conflict"; strings.Join(statuses, " ") != want {
		t.Fatalf("results: %s, want %s", strings.Join(statuses, " "), want)
	}
	if s, _ := r.Session(ctx, two.ID); s.Status != cairn.StatusCompleted {
		t.Fatalf("both calls of one session: %s", s.Status)
	}
	for _, bad := range []cairn.BulkRequest{
		{},
		{Decisions: list, Select: &cairn.Selector{}},
		{Select: &cairn.Selector{}, Action: cairn.ActionAnswer},
		{Select: &cairn.Selector{}, Action: cairn.ActionApprove, Limit: 5000},
		{Decisions: []cairn.BulkDecision{list[0], list[0]}},
		{Select: &cairn.Selector{Kind: "nope"}, Action: cairn.ActionApprove},
	} {
		if _, err := r.DecideMany(ctx, bad, &cairn.TurnOptions{Actor: ana}); !errors.Is(err, cairn.ErrInvalidRequest) {
			t.Errorf("%+v: %v, want ErrInvalidRequest", bad, err)
		}
	}
}
