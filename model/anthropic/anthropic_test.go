package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/internal/testkit/fakeanthropic"
	"github.com/cairnhq/cairn/model/anthropic"
)

type deleteArgs struct {
	Filename string `json:"filename"`
}

// Through the Anthropic adapter: approve runs the tool once and the
// model sees its output; reject never runs it and the model sees the reason.
func TestApproveAndRejectThroughTheMessagesAPI(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			fake := fakeanthropic.Start(t, func(r fakeanthropic.Request) fakeanthropic.Reply {
				if last := r.LastBlock(); last.Type == "tool_result" {
					content := last.ContentText()
					if last.IsError {
						return fakeanthropic.Reply{Text: "I did not delete it: " + content}
					}
					return fakeanthropic.Reply{Text: "Done: " + content}
				}
				return fakeanthropic.Reply{Text: "I'll delete it.", ToolCalls: []fakeanthropic.Call{{ID: "toolu_01", Name: "delete_file", Input: `{"filename":"test.txt"}`}}}
			})
			var mu sync.Mutex
			var deleted []string
			tool := cairn.NewTool(&cairn.Tool{Name: "delete_file", Description: "Delete a file.", Approval: cairn.Always(), Confirmation: "Delete file '{{.filename}}'? This cannot be undone."}, func(ctx context.Context, a deleteArgs) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				deleted = append(deleted, a.Filename)
				return "Deleted " + a.Filename, nil
			})
			m := anthropic.New("claude-test", &anthropic.Options{BaseURL: fake.URL, APIKey: "sk-ant-test", Stream: stream})
			r, err := cairn.NewRunner([]*cairn.Agent{{Name: "files", Instructions: "Help manage files.", Model: m, Tools: []*cairn.Tool{tool}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ctx := context.Background()

			s, err := r.Start(ctx, "files", "Delete the file named 'test.txt'", nil)
			if err != nil {
				t.Fatal(err)
			}
			if s.Status != "paused" || s.Interrupts[0].Message != "Delete file 'test.txt'? This cannot be undone." || s.Interrupts[0].Path[0].CallID != "toolu_01" {
				t.Fatalf("%s %+v", s.Status, s.Interrupts)
			}
			s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: "approve"}}, nil)
			if err != nil || s.Output != "Done: Deleted test.txt" || len(deleted) != 1 {
				t.Fatalf("approve: %v %q %v", err, s.Output, deleted)
			}

			s = check.NoErr(t)(r.Start(ctx, "files", "Delete the file named 'test.txt'", nil))
			s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: "reject", Reason: "keep it"}}, nil)
			if err != nil || !strings.Contains(s.Output, "I did not delete it: The user rejected this tool call: keep it") || len(deleted) != 1 {
				t.Fatalf("reject: %v %q %v", err, s.Output, deleted)
			}

			// The wire format: system prompt, tool schema, tool_use and tool_result blocks.
			reqs := fake.Requests()
			first, second := reqs[0], reqs[1]
			if first.System[0].Text != "Help manage files." || first.Stream != stream || len(first.Tools) != 1 || (first.Header.Get("X-Api-Key") != "sk-ant-test" && first.Header.Get("Authorization") != "Bearer sk-ant-test") {
				t.Fatalf("first request: %+v", first)
			}
			var tool0 struct {
				Name        string
				InputSchema map[string]any `json:"input_schema"`
			}
			if err := json.Unmarshal(first.Tools[0], &tool0); err != nil {
				t.Fatal(err)
			}
			if tool0.Name != "delete_file" || tool0.InputSchema["type"] != "object" || tool0.InputSchema["properties"] == nil {
				t.Fatalf("tool = %s", first.Tools[0])
			}
			asst := second.Messages[1]
			if asst.Role != "assistant" || asst.Content[1].Type != "tool_use" || asst.Content[1].ID != "toolu_01" || string(asst.Content[1].Input) != `{"filename":"test.txt"}` {
				t.Fatalf("assistant message: %+v", asst)
			}
			if res := second.LastBlock(); res.Type != "tool_result" || res.ToolUseID != "toolu_01" {
				t.Fatalf("tool result: %+v", res)
			}
		})
	}
}

func TestStreamingDeltasAndErrors(t *testing.T) {
	fake := fakeanthropic.Start(t, func(fakeanthropic.Request) fakeanthropic.Reply { return fakeanthropic.Reply{Text: "one two three"} })
	m := anthropic.New("claude-test", &anthropic.Options{BaseURL: fake.URL, APIKey: "k", Stream: true})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "a", Model: m}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var deltas []string
	for ev, err := range cairn.Stream(func(observe func(cairn.Event)) (*cairn.Session, error) {
		return r.Start(context.Background(), "a", "hi", &cairn.StartOptions{Observe: observe})
	}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == cairn.EventModelDelta {
			deltas = append(deltas, string(ev.Data))
		}
	}
	if len(deltas) != 3 {
		t.Fatalf("deltas = %v", deltas)
	}
	zero := 0
	bad := anthropic.New("claude-test", &anthropic.Options{BaseURL: "http://127.0.0.1:1", APIKey: "k", MaxRetries: &zero})
	r2, err := cairn.NewRunner([]*cairn.Agent{{Name: "a", Model: bad}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	s, err := r2.Start(context.Background(), "a", "hi", nil)
	if err != nil || s.Status != "failed" || !strings.Contains(s.Error.Message, "anthropic claude-test") {
		t.Fatalf("%v %+v", err, s.Error)
	}
}
