package mcptools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/internal/testkit/mcptest"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/mcp/mcptools"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

const elicitTool = "everything__trigger-elicitation-request"

// everythingRunner runs an agent with every tool of server-everything (a
// Toolset: its elicitation tools are registered only after the client said
// it can answer, and announced with notifications/tools/list_changed).
func everythingRunner(t *testing.T, st store.Store) (*cairn.Runner, *mcptools.Hub) {
	t.Helper()
	h := connect(t, mcptools.Server{Name: "everything", Command: []string{mcptest.Server(t, "mcp-server-everything")}})
	m := &scripted.Model{Replies: []scripted.Reply{
		{ToolCalls: []scripted.Call{{Name: elicitTool, Arguments: `{}`}}},
		{Text: "{{.LastResult}}"},
	}}
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Toolsets: []cairn.Toolset{h.Toolset("everything", nil)}}}, &cairn.RunnerOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	testwait.For(t, 10*time.Second, "the elicitation tool to reach the agent", func() bool {
		return slices.ContainsFunc(r.Agents()[0].Tools, func(ti cairn.ToolInfo) bool { return ti.Name == elicitTool })
	})
	return r, h
}

// server-everything's elicitation tool: the server's form becomes an input
// interrupt with its schema; an answer that does not fit is refused; the
// answer goes back as accept and reaches the tool's result; a rejection
// goes back as decline. The call runs once either way.
func TestElicitationBecomesAQuestion(t *testing.T) {
	ctx := context.Background()
	r, _ := everythingRunner(t, nil)

	s, err := r.Start(ctx, "main", "ask me", nil)
	if err != nil || s.Status != cairn.StatusPaused {
		t.Fatalf("start: %v %+v", err, s)
	}
	in := s.Interrupts[0]
	var schema struct {
		Required   []string       `json:"required"`
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(in.Schema, &schema); err != nil || in.Kind != cairn.KindInput || !strings.Contains(in.Question, "Please provide inputs") ||
		!slices.Equal(schema.Required, []string{"name"}) || schema.Properties["email"] == nil {
		t.Fatalf("interrupt: %v %+v (schema %s)", err, in, in.Schema)
	}
	if _, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionAnswer, Content: json.RawMessage(`{"integer":500}`)}}, nil); err == nil || !strings.Contains(err.Error(), "name") {
		t.Fatalf("an answer without the required name: %v", err)
	}
	s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionAnswer, Content: json.RawMessage(`{"name":"Ada Lovelace","check":true,"integer":7}`)}}, nil)
	if err != nil || s.Status != cairn.StatusCompleted {
		t.Fatalf("answer: %v %+v", err, s)
	}
	for _, want := range []string{"User provided the requested information", "Name: Ada Lovelace", "Agreed to terms: true", "Favorite Integer: 7"} {
		if !strings.Contains(s.Output, want) {
			t.Fatalf("the tool's result lacks %q:\n%s", want, s.Output)
		}
	}
	assertRanOnce(t, r, s.ID)

	s = check.NoErr(t)(r.Start(ctx, "main", "ask me", nil))
	s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionReject, Reason: "private"}}, nil)
	if err != nil || s.Status != cairn.StatusCompleted || !strings.Contains(s.Output, "User declined") || !strings.Contains(s.Output, `"action": "decline"`) {
		t.Fatalf("reject: %v %+v", err, s)
	}
}

// assertRanOnce: the MCP call was sent once (one tool_started without
// answers; the later one hands over the answer to the held call).
func assertRanOnce(t *testing.T, r *cairn.Runner, id string) {
	t.Helper()
	evs := check.Events(t)(r.Events(context.Background(), id, 0))
	fresh := 0
	for _, ev := range evs {
		if ev.Type == session.EventToolStarted && !strings.Contains(string(ev.Data), `"answers"`) {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("the tool started afresh %d times", fresh)
	}
}

// A process that restarts while a server's question waits loses the MCP
// request: the answer finds no held call, and the call becomes an in-doubt
// approval instead of running again silently.
func TestElicitationLostInARestartIsInDoubt(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	first, hub := everythingRunner(t, st)
	s, err := first.Start(ctx, "main", "ask me", nil)
	if err != nil || s.Status != cairn.StatusPaused {
		t.Fatalf("start: %v %+v", err, s)
	}
	first.Close()
	hub.Close() // the process and its MCP sessions are gone

	second, _ := everythingRunner(t, st)
	s, err = second.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionAnswer, Content: json.RawMessage(`{"name":"Ada"}`)}}, nil)
	if err != nil || s.Status != cairn.StatusPaused || !s.Interrupts[0].InDoubt || s.Interrupts[0].Tool != elicitTool {
		t.Fatalf("after the restart: %v %+v", err, s)
	}
	// Approved, it runs afresh: the server asks again.
	s, err = second.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil || s.Status != cairn.StatusPaused || s.Interrupts[0].Kind != cairn.KindInput {
		t.Fatalf("approved in doubt: %v %+v", err, s)
	}
}

// A session cancelled while a server's question waits: the server hears
// "cancel" (Follow), instead of waiting for HoldFor. The server here is a
// Go SDK server over streamable HTTP, on protocol 2026-07-28 (its question
// is a multi round-trip input request), that reports what it heard.
func TestCancelledSessionCancelsTheQuestion(t *testing.T) {
	ctx := context.Background()
	heard := make(chan string, 1)
	srv := sdk.NewServer(&sdk.Implementation{Name: "asker", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "confirm", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			// Protocol 2026-07-28: the question is an input request; the
			// client calls again with the answer (multi round-trip).
			res, _ := req.Params.InputResponses["sure"].(*sdk.ElicitResult)
			if res == nil {
				return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"sure": &sdk.ElicitParams{Message: "Sure?",
					RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}}}}, nil, nil
			}
			heard <- res.Action
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Action}}}, nil, nil
		})
	api := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(api.Close) // after the client's connection closes (cleanups run last first)
	h := connect(t, mcptools.Server{Name: "asker", URL: api.URL})
	m := &scripted.Model{Replies: []scripted.Reply{{ToolCalls: []scripted.Call{{Name: "asker__confirm", Arguments: `{}`}}}, {Text: "{{.LastResult}}"}}}
	r := runner(t, m, h.Tool("asker", "confirm", nil))
	followCtx, stop := context.WithCancel(ctx)
	defer stop()
	h.Follow(followCtx, r)

	s, err := r.Start(ctx, "main", "go", nil)
	if err != nil || s.Status != cairn.StatusPaused || len(s.Interrupts[0].Schema) == 0 {
		t.Fatalf("start: %v %+v", err, s)
	}
	if _, err := r.Cancel(ctx, s.ID, cairn.CancelAll, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-heard:
		if got != "cancel" {
			t.Fatalf("the server heard %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's question was still held after the session was cancelled")
	}

	// Answered, the same server hears accept (over HTTP this time).
	s = check.NoErr(t)(r.Start(ctx, "main", "go", nil))
	s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionAnswer, Content: json.RawMessage(`{"ok":true}`)}}, nil)
	if err != nil || s.Output != "accept" || <-heard != "accept" {
		t.Fatalf("answer: %v %+v", err, s)
	}
}

// A server that adds a tool while Cairn is connected announces it with
// notifications/tools/list_changed: server.* (a Toolset) lists it, the
// runner's agent gets it, and the tools listed before stay.
func TestToolListChanged(t *testing.T) {
	ctx := context.Background()
	srv := sdk.NewServer(&sdk.Implementation{Name: "grower", Version: "1"}, nil)
	echo := func(name string) sdk.ToolHandlerFor[struct{}, any] {
		return func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " ran"}}}, nil, nil
		}
	}
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true}
	sdk.AddTool(srv, &sdk.Tool{Name: "first", Annotations: readOnly}, echo("first"))
	api := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(api.Close)
	h := connect(t, mcptools.Server{Name: "grower", URL: api.URL})
	m := &scripted.Model{Replies: []scripted.Reply{{ToolCalls: []scripted.Call{{Name: "grower__second", Arguments: `{}`}}}, {Text: "{{.LastResult}}"}}}
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Toolsets: []cairn.Toolset{h.Toolset("grower", nil)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := len(r.Agents()[0].Tools); got != 1 {
		t.Fatalf("tools at start: %d", got)
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "second", Annotations: readOnly}, echo("second"))
	testwait.For(t, 10*time.Second, "the new tool to arrive", func() bool { return len(r.Agents()[0].Tools) == 2 })
	srv.RemoveTools("first")
	s, err := r.Start(ctx, "main", "go", nil)
	if err != nil || s.Output != "second ran" {
		t.Fatalf("%v %+v", err, s)
	}
	time.Sleep(200 * time.Millisecond) // elapsed time: a window for the removal's list_changed, which must not drop the tool
	if names := h.ToolNames("grower"); len(names) != 2 {
		t.Fatalf("a tool the server stopped listing was dropped: %v", names)
	}
}

// server-everything's URL elicitation: the interrupt shows the URL; the
// answer (no text, once done) goes back as accept.
func TestURLElicitation(t *testing.T) {
	ctx := context.Background()
	h := connect(t, mcptools.Server{Name: "everything", Command: []string{mcptest.Server(t, "mcp-server-everything")}})
	const tool = "everything__trigger-url-elicitation"
	m := &scripted.Model{Replies: []scripted.Reply{
		{ToolCalls: []scripted.Call{{Name: tool, Arguments: `{"url":"https://id.example/authorize?state=7","message":"Sign in to the example"}`}}},
		{Text: "{{.LastResult}}"},
	}}
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Toolsets: []cairn.Toolset{h.Toolset("everything", nil)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	testwait.For(t, 10*time.Second, "tool "+tool+" to reach the agent", func() bool {
		return slices.ContainsFunc(r.Agents()[0].Tools, func(ti cairn.ToolInfo) bool { return ti.Name == tool })
	})
	s, err := r.Start(ctx, "main", "sign me in", nil)
	if err != nil || s.Status != cairn.StatusPaused {
		t.Fatalf("start: %v %+v", err, s)
	}
	if in := s.Interrupts[0]; in.URL != "https://id.example/authorize?state=7" || in.Question != "Sign in to the example" || len(in.Schema) != 0 {
		t.Fatalf("interrupt: %+v", in)
	}
	s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionAnswer}}, nil)
	if err != nil || !strings.Contains(s.Output, "User completed the URL elicitation flow") {
		t.Fatalf("done: %v %+v", err, s)
	}
}

// A server that hangs: the call gives the tool's timeout as its result
// (like a command tool); the server does not answer a ping either, so it is
// restarted, and the next call, once it answers again, works on a new
// session.
func TestHungServerTimesOutAndRestarts(t *testing.T) {
	ctx := context.Background()
	srv := sdk.NewServer(&sdk.Implementation{Name: "sleepy", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "awake"}}}, nil, nil
		})
	var sessions atomic.Int32 // initialize requests: MCP sessions opened
	var hung atomic.Bool
	wake := make(chan struct{})
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hung.Load() && r.Method == http.MethodPost {
			select { // hangs: answers nothing
			case <-r.Context().Done():
			case <-wake:
			}
			return
		}
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"method":"initialize"`) {
			sessions.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(api.Close)
	h := connect(t, mcptools.Server{Name: "sleepy", URL: api.URL})
	m := &scripted.Model{Replies: []scripted.Reply{{ToolCalls: []scripted.Call{{Name: "sleepy__echo", Arguments: `{}`}}}, {Text: "{{.LastResult}}"}}}
	r := runner(t, m, h.Tool("sleepy", "echo", &cairn.Tool{Timeout: 300 * time.Millisecond}))

	hung.Store(true)
	s, err := r.Start(ctx, "main", "go", nil)
	if err != nil || s.Output != `tool "sleepy__echo" timed out after 300ms` {
		t.Fatalf("a hung server: %v %+v", err, s)
	}
	time.Sleep(6 * time.Second) // elapsed time: the ping's 5 s run out: the server counts as down
	hung.Store(false)
	close(wake)
	s, err = r.Start(ctx, "main", "go", nil)
	if err != nil || s.Output != "awake" || sessions.Load() != 2 {
		t.Fatalf("after the restart: %v %+v (MCP sessions opened: %d)", err, s, sessions.Load())
	}
}
