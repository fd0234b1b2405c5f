package openai

import (
	"encoding/json"
	"testing"

	"github.com/cairnhq/cairn/model"
)

// The lean path against the SDK's types on one reply and one request of
// the bench/server cycle's shape (a Response as OpenAI sends it; a request
// with instructions, a tool, a call and its result):
//
//	go test -run XXX -bench 'Wire' -benchmem ./model/openai
func BenchmarkWire(b *testing.B) {
	reply := []byte(`{"id":"resp_1","object":"response","created_at":1764000000,"status":"completed","background":false,"error":null,"incomplete_details":null,` +
		`"instructions":"be brief","max_output_tokens":null,"max_tool_calls":null,"model":"bench-model-2026-01-01",` +
		`"output":[{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"q\":\"x\"}","call_id":"call_1","name":"lookup"}],` +
		`"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":null,"reasoning":{"effort":null,"summary":null},"safety_identifier":null,` +
		`"service_tier":"default","store":false,"temperature":1.0,"text":{"format":{"type":"text"},"verbosity":"medium"},"tool_choice":"auto",` +
		`"tools":[{"type":"function","description":"Look up.","name":"lookup","parameters":{"type":"object","properties":{"q":{"type":"string"}}},"strict":false}],` +
		`"top_logprobs":0,"top_p":1.0,"truncation":"disabled",` +
		`"usage":{"input_tokens":52,"input_tokens_details":{"cached_tokens":0},"output_tokens":9,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":61},"user":null,"metadata":{}}`)
	req := &model.Request{System: "be brief",
		Messages: []model.Message{{Role: model.RoleUser, Content: "go"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{"q":"x"}`}}},
			{Role: model.RoleTool, ToolCallID: "call_1", Content: "x"}},
		Tools: []model.ToolDefinition{{Name: "lookup", Description: "Look up.", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}}}
	m := NewResponses("bench-model", nil)
	b.Run("decode/lean", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.decode(reply); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sdkResponses(m, reply); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("request/lean", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.body(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("request/sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := m.params(req)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
