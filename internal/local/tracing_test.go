package local_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
)

func TestSpansFollowGenAIConventions(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var runs counter
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{deleteTool(&runs)}}}, &cairn.RunnerOptions{TracerProvider: tp})
	ctx := context.Background()
	s := check.NoErr(t)(r.Start(ctx, "main", "Delete test.txt", nil))
	if _, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: "approve"}}, nil); err != nil {
		t.Fatal(err)
	}

	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, sp := range rec.Ended() {
		byName[sp.Name()] = append(byName[sp.Name()], sp)
	}
	attrs := func(sp sdktrace.ReadOnlySpan) map[string]string {
		m := map[string]string{}
		for _, a := range sp.Attributes() {
			m[string(a.Key)] = a.Value.String()
		}
		return m
	}
	turns, chats, tools := byName["invoke_agent main"], byName["chat scripted"], byName["execute_tool delete_file"]
	if len(turns) != 2 || len(chats) != 2 || len(tools) != 1 {
		t.Fatalf("spans: %v", byName)
	}
	if a := attrs(turns[0]); a["gen_ai.operation.name"] != "invoke_agent" || a["gen_ai.agent.name"] != "main" || a["gen_ai.conversation.id"] != s.ID || a["cairn.session.status"] != "paused" {
		t.Fatalf("turn attributes %v", a)
	}
	if a := attrs(chats[0]); a["gen_ai.operation.name"] != "chat" || a["gen_ai.provider.name"] != "scripted" || a["gen_ai.usage.input_tokens"] == "" {
		t.Fatalf("chat attributes %v", a)
	}
	tool := tools[0]
	if a := attrs(tool); a["gen_ai.operation.name"] != "execute_tool" || a["gen_ai.tool.name"] != "delete_file" || a["gen_ai.tool.call.id"] == "" {
		t.Fatalf("tool attributes %v", a)
	}
	if tool.Parent().SpanID() != turns[1].SpanContext().SpanID() {
		t.Fatal("the tool span is not inside the resumed turn's span")
	}
}
