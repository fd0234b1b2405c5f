package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/mcp/mcpserver"
	"github.com/cairnhq/cairn/model/scripted"
)

// servedRunner: "lead" delegates to "ops" (an agent tool), whose deploy
// needs approval: a nested pause. deployed counts the deploys.
func servedRunner(t *testing.T, deployed *atomic.Int32) *cairn.Runner {
	t.Helper()
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always(), Confirmation: "Deploy {{.service}}?",
		Preview: func(ctx context.Context, args json.RawMessage) (cairn.Preview, error) {
			return cairn.TextPreview(cairn.PreviewDiff, "-image: api:v1\n+image: api:v2\n"), nil
		}},
		func(ctx context.Context, a struct {
			Service string `json:"service"`
		}) (string, error) {
			deployed.Add(1)
			return "deployed " + a.Service, nil
		})
	lead := &scripted.Model{Replies: []scripted.Reply{
		{ToolCalls: []scripted.Call{{Name: "ask_ops", Arguments: `{"input":"deploy api"}`}}},
		{Text: "lead: {{.LastResult}}"},
	}}
	ops := &scripted.Model{Replies: []scripted.Reply{
		{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"service":"api"}`}}},
		{Text: "ops: {{.LastResult}}"},
	}}
	r, err := cairn.NewRunner([]*cairn.Agent{
		{Name: "lead", Model: lead, Tools: []*cairn.Tool{cairn.AgentTool("ops", &cairn.Tool{Name: "ask_ops", Description: "Ask ops."})}},
		{Name: "ops", Model: ops, Tools: []*cairn.Tool{deploy}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// connectTo connects a Go SDK client to Cairn's MCP server in memory; a
// nil handler makes a client without elicitation.
func connectTo(t *testing.T, r *cairn.Runner, handler func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error)) *sdk.ClientSession {
	return connectAs(t, r, nil, handler)
}

// connectAs is connectTo with the server's idea of the caller.
func connectAs(t *testing.T, r *cairn.Runner, caller func(*sdk.RequestExtra) mcpserver.Caller, handler func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error)) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	srv := mcpserver.New(r, &mcpserver.Options{Caller: caller, Inbox: func(id string) string { return "http://127.0.0.1:8080/#/sessions/" + id }})
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{ElicitationHandler: handler}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// A pause two agents deep reaches the client as an elicitation; the
// approval completes the run, and the tool ran once. A first answer with
// arguments that do not fit the tool's schema is refused and asked again.
func TestServedAgentAsksByElicitation(t *testing.T) {
	var deployed atomic.Int32
	r := servedRunner(t, &deployed)
	var asked []string
	cs := connectTo(t, r, func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		if len(asked) == 1 {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"action": "approve", "arguments": `{"service":7}`}}, nil
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"action": "approve", "arguments": `{"service":"api"}`}}, nil
	})
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 3 {
		t.Fatalf("tools: %v %+v", err, tools)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "lead", Arguments: map[string]any{"input": "ship it"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if got := text(res); got != "lead: ops: deployed api" || deployed.Load() != 1 {
		t.Fatalf("result %q, deployed %d times", got, deployed.Load())
	}
	if len(asked) != 2 || !strings.Contains(asked[0], "lead › ops › Deploy api?") || !strings.Contains(asked[1], "That answer was refused") ||
		!strings.Contains(asked[0], "Preview (diff):\n-image: api:v1\n+image: api:v2") {
		t.Fatalf("asked: %q", asked)
	}
}

// A client without elicitation gets the paused result, with the session
// and the inbox link, and decides with cairn_resume; a rejection by
// elicitation reaches the model.
func TestServedAgentWithoutElicitation(t *testing.T) {
	ctx := context.Background()
	var deployed atomic.Int32
	r := servedRunner(t, &deployed)
	cs := connectTo(t, r, nil)
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "lead", Arguments: map[string]any{"input": "ship it"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	var paused struct {
		SessionID  string            `json:"session_id"`
		Interrupts []cairn.Interrupt `json:"interrupts"`
		Inbox      string            `json:"inbox"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &paused); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text(res), "The run is paused") || !strings.Contains(text(res), "cairn_resume") || paused.SessionID == "" ||
		len(paused.Interrupts) != 1 || !strings.HasSuffix(paused.Inbox, paused.SessionID) || deployed.Load() != 0 {
		t.Fatalf("paused result: %s %+v", text(res), paused)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: mcpserver.ResumeTool, Arguments: map[string]any{"session_id": paused.SessionID,
		"decisions": []any{map[string]any{"interrupt_id": paused.Interrupts[0].ID, "action": "approve"}}}})
	if err != nil || res.IsError || text(res) != "lead: ops: deployed api" || deployed.Load() != 1 {
		t.Fatalf("resume: %v %s (deployed %d)", err, text(res), deployed.Load())
	}

	declining := connectTo(t, r, func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"action": "reject", "reason": "freeze week"}}, nil
	})
	res, err = declining.CallTool(ctx, &sdk.CallToolParams{Name: "lead", Arguments: map[string]any{"input": "ship it"}})
	if err != nil || !strings.Contains(text(res), "The user rejected this tool call: freeze week") || deployed.Load() != 1 {
		t.Fatalf("rejected: %v %s", err, text(res))
	}
}

// A question with a schema (here a tool's cairn.AskFor) goes to the
// client as that form; its content is the answer.
func TestServedQuestionWithSchema(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","enum":["eu","us"]}},"required":["region"]}`)
	pick := cairn.NewTool(&cairn.Tool{Name: "pick", Description: "Pick a region."}, func(ctx context.Context, a struct{}) (string, error) {
		ans, err := cairn.AskFor(ctx, cairn.Question{Text: "Which region?", Schema: schema})
		if err != nil {
			return "", err
		}
		return "picked " + string(ans.Content), nil
	})
	m := &scripted.Model{Replies: []scripted.Reply{{ToolCalls: []scripted.Call{{Name: "pick", Arguments: `{}`}}}, {Text: "{{.LastResult}}"}}}
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{pick}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got any
	cs := connectTo(t, r, func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		got = req.Params.RequestedSchema
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"region": "eu"}}, nil
	})
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "main", Arguments: map[string]any{"input": "go"}})
	if err != nil || text(res) != `picked {"region":"eu"}` {
		t.Fatalf("%v %s", err, text(res))
	}
	if b, _ := json.Marshal(got); !strings.Contains(string(b), `"enum":["eu","us"]`) {
		t.Fatalf("the form sent: %s", b)
	}
}

// A caller who may not decide gets the paused result even with
// elicitation, and answers it forges (a retry with requestState and
// inputResponses, as protocol 2026-07-28 sends them) are refused.
func TestServedForgedAnswersAreRefused(t *testing.T) {
	ctx := context.Background()
	var deployed atomic.Int32
	r := servedRunner(t, &deployed)
	user := func(*sdk.RequestExtra) mcpserver.Caller { return mcpserver.Caller{Name: "uma", Role: "user"} }
	approve := func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"action": "approve"}}, nil
	}
	cs := connectAs(t, r, user, approve)
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "lead", Arguments: map[string]any{"input": "ship it"}})
	if err != nil || !strings.Contains(text(res), "The run is paused") {
		t.Fatalf("a user's run: %v %s", err, text(res))
	}
	var paused struct {
		SessionID  string            `json:"session_id"`
		Seq        int64             `json:"seq"`
		Interrupts []cairn.Interrupt `json:"interrupts"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &paused); err != nil {
		t.Fatal(err)
	}
	state, _ := json.Marshal(map[string]any{"session": paused.SessionID, "seq": paused.Seq})
	forged, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "lead", Arguments: map[string]any{"input": "ship it"}, RequestState: string(state),
		InputResponses: sdk.InputResponseMap{paused.Interrupts[0].ID: &sdk.ElicitResult{Action: "accept", Content: map[string]any{"action": "approve"}}}})
	if (err == nil && !forged.IsError) || deployed.Load() != 0 {
		t.Fatalf("forged answers: %v %+v, deployed %d", err, forged, deployed.Load())
	}
	if s := check.NoErr(t)(r.Session(ctx, paused.SessionID)); s.Seq != paused.Seq || s.Status != cairn.StatusPaused {
		t.Fatalf("the forged answers changed the session: %+v", s)
	}
	// Nor through cairn_resume.
	resumed, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcpserver.ResumeTool, Arguments: map[string]any{"session_id": paused.SessionID,
		"decisions": []any{map[string]any{"interrupt_id": paused.Interrupts[0].ID, "action": "approve"}}}})
	if (err == nil && !resumed.IsError) || deployed.Load() != 0 {
		t.Fatalf("cairn_resume by a user: %v %+v", err, resumed)
	}
}
