package anthropic_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/fakeanthropic"
	"github.com/cairnhq/cairn/internal/testkit/providertest"
	"github.com/cairnhq/cairn/model/anthropic"
	"github.com/cairnhq/cairn/store/sqlite"
)

// thinkingFake thinks before calling the tool (a signed block and a
// redacted one) and answers the tool's result; it refuses, as the API does,
// a follow-up whose assistant turn lost its thinking.
func thinkingFake(t *testing.T) *fakeanthropic.Server {
	return fakeanthropic.Start(t, func(r fakeanthropic.Request) fakeanthropic.Reply {
		if last := r.LastBlock(); last.Type == "tool_result" {
			return fakeanthropic.Reply{Thinking: "The file is gone; say so.", Text: "Done: " + last.ContentText()}
		}
		return fakeanthropic.Reply{Thinking: "The user wants test.txt deleted; that needs the tool.", Redacted: true,
			ToolCalls: []fakeanthropic.Call{{ID: "toolu_01", Name: "delete_file", Input: `{"filename":"test.txt"}`}}}
	})
}

// thinkingRunner is a runner on the SQLite file path whose agent thinks.
func thinkingRunner(t *testing.T, path, baseURL string, stream bool) *cairn.Runner {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := anthropic.New("claude-test", &anthropic.Options{BaseURL: baseURL, APIKey: "k", Stream: stream, MaxTokens: 8000,
		Thinking: &anthropic.Thinking{BudgetTokens: 2048}})
	tool := cairn.NewTool(&cairn.Tool{Name: "delete_file", Description: "Delete a file.", Approval: cairn.Always()},
		func(ctx context.Context, a deleteArgs) (string, error) { return "deleted " + a.Filename, nil })
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "files", Model: m, Tools: []*cairn.Tool{tool}}}, &cairn.RunnerOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// A call paused for approval with extended thinking on resumes on another
// runner (a restart: nothing in memory) and the API, which checks the
// thinking blocks and their signatures, accepts the follow-up; with the
// thinking removed from the stored events, the same resume fails with the
// API's own refusal.
func TestThinkingBlocksSurviveAPauseAndARestart(t *testing.T) {
	for _, stream := range []bool{false, true} {
		for _, strip := range []bool{false, true} {
			t.Run(fmt.Sprintf("stream=%v/stripped=%v", stream, strip), func(t *testing.T) {
				ctx := context.Background()
				fake := thinkingFake(t)
				path := filepath.Join(t.TempDir(), "cairn.db")
				first := thinkingRunner(t, path, fake.URL, stream)
				s, err := first.Start(ctx, "files", "Delete test.txt", nil)
				if err != nil || s.Status != cairn.StatusPaused {
					t.Fatalf("start: %v %+v", err, s)
				}
				first.Close()
				if strip {
					if n := providertest.StripProviderData(t, path); n != 1 {
						t.Fatalf("stripped %d model responses, want 1", n)
					}
				}

				second := thinkingRunner(t, path, fake.URL, stream)
				done, err := second.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if strip {
					if done.Status != cairn.StatusFailed || done.Error.Provider == nil || done.Error.Provider.Status != 400 ||
						!strings.Contains(done.Error.Provider.Message, "must start with a thinking block") {
						t.Fatalf("without the thinking the API must refuse: %+v %+v", done, done.Error)
					}
					return
				}
				if done.Status != cairn.StatusCompleted || done.Output != "Done: deleted test.txt" {
					t.Fatalf("resume: %+v %+v", done, done.Error)
				}
				reqs := fake.Requests()
				follow := reqs[len(reqs)-1].Messages[1].Content
				if len(follow) != 3 || follow[0].Type != "thinking" || follow[1].Type != "redacted_thinking" || follow[2].Type != "tool_use" {
					t.Fatalf("the follow-up's assistant turn: %+v", follow)
				}
			})
		}
	}
}

// The same across a stateless invocation: the continuation token carries
// the thinking, and another runner holding the key resumes it.
func TestThinkingBlocksSurviveAContinuationToken(t *testing.T) {
	ctx := context.Background()
	fake := thinkingFake(t)
	key := []byte(strings.Repeat("k", 32))
	runner := func() *cairn.Runner {
		m := anthropic.New("claude-test", &anthropic.Options{BaseURL: fake.URL, APIKey: "k", MaxTokens: 8000, Thinking: &anthropic.Thinking{BudgetTokens: 2048}})
		tool := cairn.NewTool(&cairn.Tool{Name: "delete_file", Description: "Delete a file.", Approval: cairn.Always()},
			func(ctx context.Context, a deleteArgs) (string, error) { return "deleted " + a.Filename, nil })
		r, err := cairn.NewRunner([]*cairn.Agent{{Name: "files", Model: m, Tools: []*cairn.Tool{tool}}}, &cairn.RunnerOptions{ContinuationKeys: [][]byte{key}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	res, err := runner().Invoke(ctx, "files", "Delete test.txt", nil)
	if err != nil || res.Status != cairn.StatusPaused {
		t.Fatalf("invoke: %v %+v", err, res)
	}
	done, err := runner().Continue(ctx, "files", res.Continuation, []cairn.Decision{{InterruptID: res.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil || done.Status != cairn.StatusCompleted || done.Output != "Done: deleted test.txt" {
		t.Fatalf("continue: %v %+v %+v", err, done, done.Error)
	}
}
