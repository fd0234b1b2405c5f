// Package eino runs Cairn's benchmark scenarios with Eino's ADK
// (github.com/cloudwego/eino), with the same kind of scripted in-process
// model and in-memory checkpoint store, so that bench/run.sh can print the
// two side by side. Benchmark names match bench/bench_test.go.
package eino

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// scriptedModel asks for the tool, then answers once it has the result.
type scriptedModel struct{ tool string }

func (m *scriptedModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	if last := in[len(in)-1]; last.Role == schema.Tool {
		return schema.AssistantMessage("done", nil), nil
	}
	return schema.AssistantMessage("", []schema.ToolCall{{ID: "call_1", Function: schema.FunctionCall{Name: m.tool, Arguments: `{"q":"x"}`}}}), nil
}

func (m *scriptedModel) Stream(context.Context, []*schema.Message, ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	return nil, errors.New("not streaming")
}

func (m *scriptedModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return m, nil
}

// lookup is the benchmark's tool; gated, it interrupts on its first call and
// runs when resumed (Eino's documented approval pattern).
type lookup struct{ gated bool }

func (l *lookup) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: "lookup", Desc: "Look up.", ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
		"q": {Type: schema.String, Required: true},
	})}, nil
}

func (l *lookup) InvokableRun(ctx context.Context, args string, _ ...tool.Option) (string, error) {
	if l.gated {
		if was, _, _ := tool.GetInterruptState[string](ctx); !was {
			return "", tool.StatefulInterrupt(ctx, "approve lookup?", args)
		}
		if isTarget, _, _ := tool.GetResumeContext[string](ctx); !isTarget {
			return "", tool.StatefulInterrupt(ctx, "approve lookup?", args)
		}
	}
	return "ok", nil
}

type memStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memStore) Set(_ context.Context, k string, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[k] = v
	return nil
}

func (s *memStore) Get(_ context.Context, k string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	return v, ok, nil
}

// agent is a ChatModelAgent whose model calls toolName once.
func agent(b *testing.B, name, toolName string, tools ...tool.BaseTool) adk.Agent {
	a, err := adk.NewChatModelAgent(context.Background(), &adk.ChatModelAgentConfig{
		Name: name, Description: name, Instruction: "be brief",
		Model:       &scriptedModel{tool: toolName},
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: tools}},
	})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// drain runs an iterator to its end and returns the root-cause interrupt id.
func drain(b *testing.B, it *adk.AsyncIterator[*adk.AgentEvent]) (interruptID, output string) {
	for {
		ev, ok := it.Next()
		if !ok {
			return
		}
		if ev.Err != nil {
			b.Fatal(ev.Err)
		}
		if ev.Action != nil && ev.Action.Interrupted != nil {
			for _, ic := range ev.Action.Interrupted.InterruptContexts {
				if ic.IsRootCause {
					interruptID = ic.ID
				}
			}
		}
		if ev.Output != nil && ev.Output.MessageOutput != nil && ev.Output.MessageOutput.Message != nil {
			output = ev.Output.MessageOutput.Message.Content
		}
	}
}

func BenchmarkTurn(b *testing.B) {
	ctx := context.Background()
	r := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent(b, "main", "lookup", &lookup{})})
	b.ReportAllocs()
	for b.Loop() {
		if _, out := drain(b, r.Query(ctx, "go")); out != "done" {
			b.Fatalf("output %q", out)
		}
	}
}

func pauseResume(b *testing.B, a adk.Agent) {
	ctx := context.Background()
	r := adk.NewRunner(ctx, adk.RunnerConfig{Agent: a, CheckPointStore: &memStore{m: map[string][]byte{}}})
	var n atomic.Int64
	b.ReportAllocs()
	for b.Loop() {
		id := fmt.Sprint(n.Add(1))
		intID, _ := drain(b, r.Query(ctx, "go", adk.WithCheckPointID(id)))
		if intID == "" {
			b.Fatal("no interrupt")
		}
		it, err := r.ResumeWithParams(ctx, id, &adk.ResumeParams{Targets: map[string]any{intID: "approved"}})
		if err != nil {
			b.Fatal(err)
		}
		if _, out := drain(b, it); out != "done" {
			b.Fatalf("output %q", out)
		}
	}
}

func BenchmarkPauseResume(b *testing.B) {
	b.Run("store=memory", func(b *testing.B) { pauseResume(b, agent(b, "main", "lookup", &lookup{gated: true})) })
}

func BenchmarkNestedPauseResume(b *testing.B) {
	ctx := context.Background()
	child := agent(b, "child", "lookup", &lookup{gated: true})
	pauseResume(b, agent(b, "parent", "child", adk.NewAgentTool(ctx, child)))
}
