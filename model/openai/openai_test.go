package openai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/fakeopenai"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/openai"
)

func TestRoundTripBothModes(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			srv := fakeopenai.Start(t, func(r fakeopenai.Request) fakeopenai.Reply {
				if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
					return fakeopenai.Reply{Content: "The deployment was successful."}
				}
				return fakeopenai.Reply{ToolCalls: []fakeopenai.Call{{ID: "call_abc", Name: "deploy_code", Arguments: `{"environment":"production"}`}}}
			})
			m := openai.New(openai.Options{Model: "gpt-4o-mini", BaseURL: srv.BaseURL(), APIKey: "sk-test", Stream: stream})
			tools := []model.ToolDefinition{{Name: "deploy_code", Description: "Deploy.", Parameters: json.RawMessage(`{"type":"object","properties":{"environment":{"type":"string"}}}`)}}
			ctx := context.Background()
			resp, err := m.Generate(ctx, &model.Request{System: "You deploy.", Messages: []model.Message{{Role: model.RoleUser, Content: "Deploy to production."}}, Tools: tools})
			if err != nil {
				t.Fatal(err)
			}
			calls := resp.Message.ToolCalls
			if len(calls) != 1 || calls[0].ID != "call_abc" || calls[0].Name != "deploy_code" || calls[0].Arguments != `{"environment":"production"}` {
				t.Fatalf("tool calls = %+v", calls)
			}
			if resp.Usage.InputTokens != 11 || resp.Usage.OutputTokens != 7 {
				t.Fatalf("usage = %+v", resp.Usage)
			}
			var deltas []string
			history := []model.Message{{Role: model.RoleUser, Content: "Deploy to production."}, resp.Message, {Role: model.RoleTool, ToolCallID: "call_abc", Content: "deployed"}}
			resp, err = m.Generate(ctx, &model.Request{Messages: history, Tools: tools, OnTextDelta: func(d string) { deltas = append(deltas, d) }})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "The deployment was successful." || len(resp.Message.ToolCalls) != 0 {
				t.Fatalf("message = %+v", resp.Message)
			}
			if stream && (len(deltas) < 2 || strings.Join(deltas, "") != resp.Message.Content) {
				t.Fatalf("deltas = %q", deltas)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 || reqs[0].Stream != stream || reqs[0].Model != "gpt-4o-mini" || len(reqs[0].Tools) != 1 {
				t.Fatalf("requests = %+v", reqs)
			}
			if reqs[0].Messages[0].Role != "system" || reqs[0].Messages[0].Text() != "You deploy." {
				t.Fatalf("system message = %+v", reqs[0].Messages[0])
			}
			second := reqs[1].Messages
			if second[1].Role != "assistant" || len(second[1].ToolCalls) != 1 || second[1].ToolCalls[0].ID != "call_abc" ||
				second[2].Role != "tool" || second[2].ToolCallID != "call_abc" || second[2].Text() != "deployed" {
				t.Fatalf("second request messages = %+v", second)
			}
			if got := reqs[0].Header.Get("Authorization"); got != "Bearer sk-test" {
				t.Fatalf("authorization = %q", got)
			}
		})
	}
}

func TestServerErrorIsReported(t *testing.T) {
	zero := 0
	m := openai.New(openai.Options{Model: "x", BaseURL: "http://127.0.0.1:1/v1", MaxRetries: &zero})
	_, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
	if err == nil || !strings.Contains(err.Error(), "openai x") {
		t.Fatalf("err = %v", err)
	}
}
