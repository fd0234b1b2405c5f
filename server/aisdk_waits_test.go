package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/fakeopenai"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/openai"
	"github.com/cairnhq/cairn/server"
)

// clientToolServer serves an agent whose get_location tool the client
// runs; its model answers with the tool's result.
func clientToolServer(t *testing.T) (*cairn.Runner, string) {
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if l := req.Messages[len(req.Messages)-1]; l.Role == model.RoleTool {
			prefix := "You are in "
			if l.IsError {
				prefix = "No location: "
			}
			return &model.Response{Message: model.Message{Content: prefix + l.Content}}, nil
		}
		return &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "call_loc", Name: "get_location", Arguments: `{"precision":"city"}`}}}}, nil
	})
	locate := cairn.ClientTool(&cairn.Tool{Name: "get_location", Description: "The user's location, from the browser.",
		Parameters:   json.RawMessage(`{"type":"object","properties":{"precision":{"type":"string"}}}`),
		ResultSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{locate}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	srv := httptest.NewServer(server.New(r, nil))
	t.Cleanup(srv.Close)
	return r, srv.URL
}

// The real AI SDK chat client (ai 6 and 7) runs a client-side tool the AI
// SDK's way — onToolCall, addToolOutput, sendAutomaticallyWhen — and the
// session continues with its output; an output-error fails the call with
// the client's words.
func TestAISDKRunsAClientTool(t *testing.T) {
	for _, c := range aiClients {
		t.Run(c.name, func(t *testing.T) {
			for _, tc := range []struct{ name, output, want string }{
				{"output", `{"city":"Lyon"}`, `You are in {"city":"Lyon"}`},
				{"error", `{"error":"the user denied location access"}`, "No location: the client could not run tool get_location: the user denied location access"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r, base := clientToolServer(t)
					chatID := "loc_" + strings.ReplaceAll(c.module, ".", "") + "_" + tc.name
					out := nodeClient(t, "aisdk-client-tool.mjs", c.module, c.env, base, "main", "", chatID, "where am I?", "get_location", tc.output)
					var got struct {
						uiMessages
						Ran []json.RawMessage `json:"ran"`
					}
					if err := json.Unmarshal(out, &got); err != nil {
						t.Fatalf("%v: %s", err, out)
					}
					if len(got.Errors) > 0 || len(got.Ran) != 1 || string(got.Ran[0]) != `{"precision":"city"}` || !strings.Contains(got.text(), tc.want) {
						t.Fatalf("errors %v, ran %s, text %q\n%s", got.Errors, got.Ran, got.text(), out)
					}
					s, err := r.Session(context.Background(), chatID)
					if err != nil || s.Status != cairn.StatusCompleted || s.Output != tc.want {
						t.Fatalf("the session: %v %+v", err, s)
					}
				})
			}
		})
	}
}

// The real AG-UI client runs a frontend tool: declared in the run's tools,
// the agent's call arrives as TOOL_CALL events (not as an interrupt), the
// client adds a tool message with the result and runs again, and the run
// continues with it.
func TestAGUIRunsAFrontendTool(t *testing.T) {
	r, base := clientToolServer(t)
	out := nodeClient(t, "agui-frontend-tool.mjs", "@ag-ui/client", nil, base+"/v1/agents/main/ag-ui", "", "agui_loc", "where am I?", "get_location", `{"city":"Lyon"}`)
	var got struct {
		Outcomes []map[string]any `json:"outcomes"`
		Errors   []any            `json:"errors"`
		Ran      []struct {
			ID   string         `json:"id"`
			Args map[string]any `json:"args"`
		} `json:"ran"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Errors) > 0 || len(got.Ran) != 1 || got.Ran[0].ID != "call_loc" || got.Ran[0].Args["precision"] != "city" ||
		len(got.Outcomes) != 2 || got.Outcomes[0]["type"] != "success" || got.Outcomes[1]["type"] != "success" {
		t.Fatalf("%s", out)
	}
	s, err := r.Session(context.Background(), "agui_loc")
	if err != nil || s.Status != cairn.StatusCompleted || s.Output != `You are in {"city":"Lyon"}` {
		t.Fatalf("the session: %v %+v", err, s)
	}
}

// A question answered the AI SDK's way (issue 30): ask_user arrives as a
// tool part in input-available; the real ai client (6 and 7) answers it
// with addToolOutput, the re-post answers the question, the tool runs
// again with the answer and the session completes.
func TestAISDKAnswersAQuestionWithAddToolOutput(t *testing.T) {
	for _, c := range aiClients {
		t.Run(c.name, func(t *testing.T) {
			m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
				if l := req.Messages[len(req.Messages)-1]; l.Role == model.RoleTool {
					return &model.Response{Message: model.Message{Content: "Booked for " + l.Content}}, nil
				}
				return &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "call_q", Name: "ask_user", Arguments: `{"question":"Which city?"}`}}}}, nil
			})
			r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{cairn.AskUser("ask_user")}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			srv := httptest.NewServer(server.New(r, nil))
			defer srv.Close()
			chatID := "ask_" + strings.ReplaceAll(c.module, ".", "")
			out := nodeClient(t, "aisdk-client-tool.mjs", c.module, c.env, srv.URL, "main", "", chatID, "book me a hotel", "ask_user", `"Lyon"`)
			var got uiMessages
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if len(got.Errors) > 0 || !strings.Contains(got.text(), "Booked for Lyon") {
				t.Fatalf("errors %v, text %q\n%s", got.Errors, got.text(), out)
			}
			s, err := r.Session(context.Background(), chatID)
			if err != nil || s.Status != cairn.StatusCompleted || s.Output != "Booked for Lyon" {
				t.Fatalf("the session: %v %+v", err, s)
			}
		})
	}
}

// AG-UI resume with payload.output follows the rule of the other doors:
// the thread's own user gives its client tool's result (as an approver
// could); another user may not.
func TestAGUIResumeOutputByTheThreadsUser(t *testing.T) {
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if l := req.Messages[len(req.Messages)-1]; l.Role == model.RoleTool {
			return &model.Response{Message: model.Message{Content: "You are in " + l.Content}}, nil
		}
		return &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "call_loc", Name: "get_location", Arguments: `{}`}}}}, nil
	})
	locate := cairn.ClientTool(&cairn.Tool{Name: "get_location", Description: "The user's location.",
		ResultSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{locate}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(server.New(r, &server.Options{Tokens: []server.Token{
		{Name: "uma", Secret: "user-token-uma-0123456789", Role: server.RoleUser},
		{Name: "ulf", Secret: "user-token-ulf-0123456789", Role: server.RoleUser},
	}}))
	defer srv.Close()
	post := func(token, body string) string {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/agents/main/ag-ui", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	post("user-token-uma-0123456789", `{"threadId":"loc-1","runId":"r1","messages":[{"id":"u1","role":"user","content":"where am I?"}]}`)
	s, err := r.Session(t.Context(), "loc-1")
	if err != nil || s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 || s.Interrupts[0].Kind != cairn.KindClient {
		t.Fatalf("the thread: %v %+v", err, s)
	}
	resume := `{"threadId":"loc-1","runId":"r2","messages":[],"resume":[{"interruptId":"` + s.Interrupts[0].ID + `","status":"resolved","payload":{"output":{"city":"Lyon"}}}]}`
	if out := post("user-token-ulf-0123456789", resume); strings.Contains(out, "RUN_FINISHED") {
		t.Fatalf("another user's output was taken:\n%s", out)
	}
	if s, err := r.Session(t.Context(), "loc-1"); err != nil || s.Status != cairn.StatusPaused {
		t.Fatalf("after another user's output: %v %+v", err, s)
	}
	if out := post("user-token-uma-0123456789", resume); !strings.Contains(out, "RUN_FINISHED") || strings.Contains(out, "RUN_ERROR") {
		t.Fatalf("the thread's user's output:\n%s", out)
	}
	if s, err := r.Session(t.Context(), "loc-1"); err != nil || s.Status != cairn.StatusCompleted || s.Output != `You are in {"city":"Lyon"}` {
		t.Fatalf("after the output: %v %+v", err, s)
	}
}

// The real AG-UI client declares a frontend tool only in the run's tools
// (the agent has none: CopilotKit's frontend actions): the model (the
// official OpenAI SDK against a fake Chat Completions server) is offered
// it, calls it, the client's tool message completes it in the next run,
// and the session completes. An agent whose config forbids frontend tools
// refuses the run and records nothing.
func TestAGUIDeclaredFrontendTool(t *testing.T) {
	fake := fakeopenai.Start(t, func(req fakeopenai.Request) fakeopenai.Reply {
		if l := req.Messages[len(req.Messages)-1]; l.Role == "tool" {
			return fakeopenai.Reply{Content: "Shown: " + l.Text()}
		}
		for _, tl := range req.Tools {
			if strings.Contains(string(tl), `"show_weather"`) && strings.Contains(string(tl), `"city"`) {
				return fakeopenai.Reply{ToolCalls: []fakeopenai.Call{{ID: "call_w", Name: "show_weather", Arguments: `{"city":"Oslo"}`}}}
			}
		}
		return fakeopenai.Reply{Content: "no tool was offered"}
	})
	m := openai.New("gpt-4o-mini", &openai.Options{BaseURL: fake.BaseURL(), APIKey: "sk-test"})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "ui", Model: m}, {Name: "locked", Model: m, NoClientTools: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(server.New(r, nil))
	defer srv.Close()
	params := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`

	out := nodeClient(t, "agui-frontend-tool.mjs", "@ag-ui/client", nil, srv.URL+"/v1/agents/ui/ag-ui", "", "agui_weather", "weather in Oslo?", "show_weather", `"card shown"`, params)
	var got struct {
		Outcomes []map[string]any `json:"outcomes"`
		Errors   []any            `json:"errors"`
		Ran      []struct {
			ID   string         `json:"id"`
			Args map[string]any `json:"args"`
		} `json:"ran"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Errors) > 0 || len(got.Ran) != 1 || got.Ran[0].ID != "call_w" || got.Ran[0].Args["city"] != "Oslo" || len(got.Outcomes) != 2 {
		t.Fatalf("%s", out)
	}
	s, err := r.Session(context.Background(), "agui_weather")
	if err != nil || s.Status != cairn.StatusCompleted || s.Output != "Shown: card shown" {
		t.Fatalf("the session: %v %+v", err, s)
	}
	// The first request offered the declared tool, as the client declared it.
	if first := fake.Requests()[0]; len(first.Tools) != 1 || !strings.Contains(string(first.Tools[0]), `"required":["city"]`) {
		t.Fatalf("offered: %s", first.Tools)
	}

	out = nodeClient(t, "agui-frontend-tool.mjs", "@ag-ui/client", nil, srv.URL+"/v1/agents/locked/ag-ui", "", "agui_locked", "weather in Oslo?", "show_weather", `"x"`, params)
	if !strings.Contains(string(out), "takes no tools from the client") {
		t.Fatalf("a locked agent: %s", out)
	}
	if _, err := r.Session(context.Background(), "agui_locked"); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("a refused run recorded a session: %v", err)
	}
}
