package cairn_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
)

// clock is a test clock the runner's background loops may read.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func requestRunner(t *testing.T, c *clock) *cairn.Runner {
	t.Helper()
	chat := &cairn.Agent{Name: "chat", Model: scripted.New(scripted.Reply{Text: "hi"})}
	opts := &cairn.RunnerOptions{}
	if c != nil {
		opts.Now = c.now
	}
	r, err := cairn.NewRunner([]*cairn.Agent{cairn.ApprovalsAgent(nil, nil), chat}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestApprovalRequestRejectedExpiredAndRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)}
	r := requestRunner(t, c)
	owner := &cairn.StartOptions{Owner: "bot"}

	t.Run("rejected", func(t *testing.T) {
		a, _, err := r.RequestApproval(ctx, cairn.ApprovalRequest{Tool: "drop_table", Arguments: json.RawMessage(`{"table":"users"}`)}, owner)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(a.Interrupt.Message, "drop_table") {
			t.Errorf("the default message names the tool: %q", a.Interrupt.Message)
		}
		s, _ := r.Session(ctx, a.ID)
		if _, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: a.Interrupt.ID, Action: cairn.ActionReject, Reason: "not in prod"}}, nil); err != nil {
			t.Fatal(err)
		}
		a, err = r.AwaitCallApproval(ctx, a.ID, time.Second)
		if err != nil || a.Status != cairn.ApprovalRejected || a.Reason != "not in prod" || a.Interrupt != nil {
			t.Fatalf("%v %+v", err, a)
		}
		if _, err := r.RecordCallResult(ctx, a.ID, cairn.Completion{Output: json.RawMessage(`1`)}, nil); !errors.Is(err, cairn.ErrConflict) || !strings.Contains(err.Error(), "rejected") {
			t.Fatalf("a result of a rejected call: %v", err)
		}
	})
	t.Run("expired", func(t *testing.T) {
		a, _, err := r.RequestApproval(ctx, cairn.ApprovalRequest{Tool: "deploy", ExpiresIn: time.Hour}, owner)
		if err != nil {
			t.Fatal(err)
		}
		if a.ExpiresAt == nil || !a.ExpiresAt.Equal(c.now().Add(time.Hour)) || a.Interrupt.ExpiresAt == nil {
			t.Fatalf("expiry: %+v", a)
		}
		c.add(2 * time.Hour)
		if n, err := r.ExpireDue(ctx); err != nil || n < 1 {
			t.Fatalf("ExpireDue: %d %v", n, err)
		}
		a, err = r.CallApproval(ctx, a.ID)
		if err != nil || a.Status != cairn.ApprovalExpired || a.Actor.Role != "expiry" {
			t.Fatalf("%v %+v", err, a)
		}
	})
	t.Run("a wait that ends undecided returns it pending", func(t *testing.T) {
		a, _, err := r.RequestApproval(ctx, cairn.ApprovalRequest{Tool: "deploy"}, owner)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.AwaitCallApproval(ctx, a.ID, 50*time.Millisecond)
		if err != nil || got.Status != cairn.ApprovalPending {
			t.Fatalf("%v %+v", err, got)
		}
	})
	t.Run("a decision ends a wait", func(t *testing.T) {
		a, _, err := r.RequestApproval(ctx, cairn.ApprovalRequest{Tool: "deploy"}, owner)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan *cairn.CallApproval, 1)
		go func() {
			got, _ := r.AwaitCallApproval(ctx, a.ID, time.Minute)
			done <- got
		}()
		s, _ := r.Session(ctx, a.ID)
		if _, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: a.Interrupt.ID, Action: cairn.ActionApprove}}, nil); err != nil {
			t.Fatal(err)
		}
		if got := <-done; got.Status != cairn.ApprovalApproved || got.Interrupt == nil || got.Interrupt.Kind != cairn.KindClient {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("one key names one request", func(t *testing.T) {
		req := cairn.ApprovalRequest{Tool: "pay", Arguments: json.RawMessage(`{"to":"x","eur":5}`), IdempotencyKey: "k1"}
		first, created, err := r.RequestApproval(ctx, req, owner)
		if err != nil || !created {
			t.Fatal(err, created)
		}
		// The same arguments in another order are the same request.
		req.Arguments = json.RawMessage(`{"eur":5, "to":"x"}`)
		if again, created, err := r.RequestApproval(ctx, req, owner); err != nil || created || again.ID != first.ID {
			t.Fatalf("%v %v %+v", err, created, again)
		}
		req.Arguments = json.RawMessage(`{"to":"x","eur":500}`)
		if _, _, err := r.RequestApproval(ctx, req, owner); !errors.Is(err, cairn.ErrConflict) || !strings.Contains(err.Error(), "another request") {
			t.Fatalf("another request under the key: %v", err)
		}
		// Another owner's key is another request.
		if other, created, err := r.RequestApproval(ctx, req, &cairn.StartOptions{Owner: "someone-else"}); err != nil || !created || other.ID == first.ID {
			t.Fatalf("%v %v %+v", err, created, other)
		}
	})
	t.Run("bad requests record nothing", func(t *testing.T) {
		before, _ := r.Sessions(ctx, "")
		for _, req := range []cairn.ApprovalRequest{
			{Tool: ""},
			{Tool: "has space"},
			{Tool: "x", Arguments: json.RawMessage(`[1,2]`)},
			{Tool: "x", Arguments: json.RawMessage(`{"a":`)},
			{Tool: "x", Schema: json.RawMessage(`{"type":"object","required":["a"]}`)},
			{Tool: "x", Schema: json.RawMessage(`{"type":"nonsense"}`)},
			{Tool: "x", ExpiresIn: -time.Second},
			{Tool: "x", Agent: "chat"},
			{Tool: "x", Agent: "nobody"},
			{Tool: "x", Message: strings.Repeat("m", 9000)},
		} {
			if _, _, err := r.RequestApproval(ctx, req, owner); err == nil {
				t.Errorf("%+v: accepted", req)
			}
		}
		if after, _ := r.Sessions(ctx, ""); len(after) != len(before) {
			t.Fatalf("refused requests recorded %d sessions", len(after)-len(before))
		}
	})
	t.Run("a chat is not an approval request", func(t *testing.T) {
		s, err := r.Start(ctx, "chat", "hello", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.CallApproval(ctx, s.ID); !errors.Is(err, cairn.ErrNotFound) {
			t.Fatalf("%v", err)
		}
	})
}
