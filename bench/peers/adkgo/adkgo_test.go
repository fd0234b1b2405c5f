// Package adkgo runs Cairn's benchmark scenarios with Google's ADK for Go
// (google.golang.org/adk/v2), with a scripted in-process model and the
// in-memory session service. Benchmark names match bench/bench_test.go.
package adkgo

import (
	"context"
	"fmt"
	"iter"
	"sync/atomic"
	"testing"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/agenttool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"
)

// scripted asks for its tool, then answers once it has the tool's response.
type scripted struct{ tool string }

func (m *scripted) Name() string { return "scripted" }

func (m *scripted) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		last := req.Contents[len(req.Contents)-1]
		for _, p := range last.Parts {
			if p.FunctionResponse != nil && p.FunctionResponse.Name == m.tool {
				yield(&model.LLMResponse{Content: genai.NewContentFromText("done", genai.RoleModel)}, nil)
				return
			}
		}
		yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{
			FunctionCall: &genai.FunctionCall{ID: "call_1", Name: m.tool, Args: map[string]any{"q": "x"}},
		}}}}, nil)
	}
}

type lookupArgs struct {
	Q string `json:"q"`
}

type lookupResult struct {
	Result string `json:"result"`
}

func lookup(b *testing.B, gated bool) tool.Tool {
	t, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "Look up.", RequireConfirmation: gated},
		func(ctx agent.Context, a lookupArgs) (lookupResult, error) { return lookupResult{"ok"}, nil })
	if err != nil {
		b.Fatal(err)
	}
	return t
}

func llm(b *testing.B, name, toolName string, tools ...tool.Tool) agent.Agent {
	a, err := llmagent.New(llmagent.Config{Name: name, Model: &scripted{tool: toolName}, Instruction: "be brief", Tools: tools})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

type harness struct {
	r   *runner.Runner
	svc session.Service
	n   atomic.Int64
}

func newHarness(b *testing.B, a agent.Agent) *harness {
	svc := session.InMemoryService()
	r, err := runner.New(runner.Config{AppName: "bench", Agent: a, SessionService: svc})
	if err != nil {
		b.Fatal(err)
	}
	return &harness{r: r, svc: svc}
}

func (h *harness) session(b *testing.B) string {
	s, err := h.svc.Create(context.Background(), &session.CreateRequest{AppName: "bench", UserID: "u", SessionID: fmt.Sprint(h.n.Add(1))})
	if err != nil {
		b.Fatal(err)
	}
	return s.Session.ID()
}

// run drains one run; it returns the confirmation call's id, if any, and the last text.
func (h *harness) run(b *testing.B, sid string, msg *genai.Content) (confirmID, text string) {
	for ev, err := range h.r.Run(context.Background(), "u", sid, msg, agent.RunConfig{StreamingMode: agent.StreamingModeNone}) {
		if err != nil {
			b.Fatal(err)
		}
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionCall != nil && p.FunctionCall.Name == toolconfirmation.FunctionCallName {
				confirmID = p.FunctionCall.ID
			}
			if p.Text != "" {
				text = p.Text
			}
		}
	}
	return confirmID, text
}

func BenchmarkTurn(b *testing.B) {
	h := newHarness(b, llm(b, "main", "lookup", lookup(b, false)))
	b.ReportAllocs()
	for b.Loop() {
		if _, text := h.run(b, h.session(b), genai.NewContentFromText("go", genai.RoleUser)); text != "done" {
			b.Fatalf("text %q", text)
		}
	}
}

func pauseResume(b *testing.B, a agent.Agent) {
	h := newHarness(b, a)
	b.ReportAllocs()
	for b.Loop() {
		sid := h.session(b)
		id, _ := h.run(b, sid, genai.NewContentFromText("go", genai.RoleUser))
		if id == "" {
			b.Skip("no confirmation request surfaced (ADK-Go's agent tool drops a child's confirmation: DESIGN.md §7)")
		}
		approve := &genai.Content{Role: string(genai.RoleUser), Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
			Name: toolconfirmation.FunctionCallName, ID: id, Response: map[string]any{"confirmed": true},
		}}}}
		if _, text := h.run(b, sid, approve); text != "done" {
			b.Fatalf("text %q", text)
		}
	}
}

func BenchmarkPauseResume(b *testing.B) {
	b.Run("store=memory", func(b *testing.B) { pauseResume(b, llm(b, "main", "lookup", lookup(b, true))) })
}

func BenchmarkNestedPauseResume(b *testing.B) {
	child := llm(b, "child", "lookup", lookup(b, true))
	pauseResume(b, llm(b, "parent", "child", agenttool.New(child, nil)))
}
