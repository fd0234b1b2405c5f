package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/internal/testkit/fakeanthropic"
	"github.com/cairnhq/cairn/model/anthropic"
	"github.com/cairnhq/cairn/store/sqlite"
)

// A session paused three agents deep, every agent on Claude with signed
// thinking (the fake checks each signature as the provider does), is
// forked at its first pause and decided the other way: the fork completes
// on its own path, the tool that ran before the pause does not run again,
// and the original's log is byte for byte what it was; the original then
// completes its own way. A seq that is no fork point is refused naming the
// nearest ones; a completed fork takes another message.
func TestForkAtADepth3PauseWithThinking(t *testing.T) {
	ctx := context.Background()
	fake := fakeanthropic.Start(t, func(r fakeanthropic.Request) fakeanthropic.Reply {
		agent := r.System[0].Text
		if last := r.LastBlock(); last.Type == "tool_result" {
			return fakeanthropic.Reply{Thinking: "Report it.", Text: agent + ": " + strings.TrimSpace(last.ContentText())}
		} else if last.Type == "text" && strings.HasPrefix(last.Text, "And ") {
			return fakeanthropic.Reply{Thinking: "Another way.", Text: agent + " again: " + last.Text}
		}
		switch agent {
		case "lead":
			return fakeanthropic.Reply{Thinking: "Ops does it.", ToolCalls: []fakeanthropic.Call{{ID: "toolu_l", Name: "ask_ops", Input: `{"input":"deploy"}`}}}
		case "ops":
			return fakeanthropic.Reply{Thinking: "Infra does it.", ToolCalls: []fakeanthropic.Call{{ID: "toolu_o", Name: "ask_infra", Input: `{"input":"deploy"}`}}}
		}
		return fakeanthropic.Reply{Thinking: "Check, then deploy.", Redacted: true, ToolCalls: []fakeanthropic.Call{
			{ID: "toolu_c", Name: "check", Input: `{}`}, {ID: "toolu_d", Name: "deploy", Input: `{"env":"prod"}`}}}
	})
	claude := anthropic.New("claude", &anthropic.Options{BaseURL: fake.URL, APIKey: "k", MaxTokens: 8000, Thinking: &anthropic.Thinking{BudgetTokens: 2048}})
	var checks, deploys atomic.Int32
	checker := cairn.NewTool(&cairn.Tool{Name: "check", Description: "Check."}, func(ctx context.Context, _ struct{}) (string, error) {
		checks.Add(1)
		return "green", nil
	})
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()}, func(ctx context.Context, a struct {
		Env string `json:"env"`
	}) (string, error) {
		deploys.Add(1)
		return "deployed " + a.Env, nil
	})
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := runnerFor(t, []*cairn.Agent{
		{Name: "lead", Instructions: "lead", Model: claude, Tools: []*cairn.Tool{cairn.AgentTool("ops", &cairn.Tool{Name: "ask_ops", Description: "Ask ops."})}},
		{Name: "ops", Instructions: "ops", Model: claude, Tools: []*cairn.Tool{cairn.AgentTool("infra", &cairn.Tool{Name: "ask_infra", Description: "Ask infra."})}},
		{Name: "infra", Instructions: "infra", Model: claude, Tools: []*cairn.Tool{checker, deploy}},
	}, &cairn.RunnerOptions{Store: st})

	s := check.NoErr(t)(r.Start(ctx, "lead", "ship it", nil))
	if s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 || len(s.Interrupts[0].Path) != 3 || checks.Load() != 1 {
		t.Fatalf("the pause: %+v, %d checks", s, checks.Load())
	}
	before, err := r.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	beforeJSON, _ := json.Marshal(before)

	// Not a fork point: the nearest are named.
	if _, err := r.Fork(ctx, s.ID, 2, nil); !errors.Is(err, cairn.ErrNotAForkPoint) || !strings.Contains(err.Error(), "the nearest after is") {
		t.Fatalf("fork at 2: %v", err)
	}
	fork := check.NoErr(t)(r.Fork(ctx, s.ID, 0, nil)) // 0: the latest point, the pause
	if fork.ID == s.ID || fork.Status != cairn.StatusPaused || fork.ForkedFrom == nil || fork.ForkedFrom.SessionID != s.ID ||
		fork.ForkedFrom.Seq != s.Seq || len(fork.Interrupts) != 1 || len(fork.Interrupts[0].Path) != 3 || fork.Seq != s.Seq+1 {
		t.Fatalf("the fork: %+v", fork)
	}
	after, err := r.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if afterJSON, _ := json.Marshal(after); string(afterJSON) != string(beforeJSON) {
		t.Fatal("forking changed the original's log")
	}

	// The fork, decided the other way: infra hears the rejection, and the
	// answer climbs the three agents, their thinking sent back signed.
	done := check.NoErr(t)(r.Resume(ctx, fork.ID, fork.Seq, []cairn.Decision{{InterruptID: fork.Interrupts[0].ID, Action: cairn.ActionReject, Reason: "not on a Friday"}}, nil))
	if done.Status != cairn.StatusCompleted || !strings.HasPrefix(done.Output, "lead: ops: infra: ") || !strings.Contains(done.Output, "not on a Friday") ||
		deploys.Load() != 0 || checks.Load() != 1 {
		t.Fatalf("the fork decided: %+v; %d deploys, %d checks", done, deploys.Load(), checks.Load())
	}
	if audit, err := r.Audit(ctx, fork.ID); err != nil || audit.Broken != nil {
		t.Fatalf("the fork's chain: %v %+v", err, audit.Broken)
	}
	// The original goes its own way.
	orig := check.NoErr(t)(r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil))
	if orig.Status != cairn.StatusCompleted || !strings.HasPrefix(orig.Output, "lead: ops: infra: ") || !strings.Contains(orig.Output, "deployed prod") || deploys.Load() != 1 {
		t.Fatalf("the original: %+v, %d deploys", orig, deploys.Load())
	}
	// A completed session forks at its end and takes another message.
	again := check.NoErr(t)(r.Fork(ctx, done.ID, 0, nil))
	if again.Status != cairn.StatusCompleted || again.ForkedFrom.SessionID != done.ID {
		t.Fatalf("fork of a completed session: %+v", again)
	}
	next := check.NoErr(t)(r.Send(ctx, again.ID, "And now?", 0, nil))
	if next.Status != cairn.StatusCompleted || next.Output != "lead again: And now?" {
		t.Fatalf("a message to the fork: %+v", next)
	}
}
