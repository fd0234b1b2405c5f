// Package fakeopenai is an OpenAI-compatible Chat Completions server for
// tests: it listens on 127.0.0.1 and speaks the real wire format (JSON and
// Server-Sent Events streaming), answering from a Go function.
package fakeopenai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/testkit/fakeserver"
)

// Message is a chat message as sent on the wire.
type Message struct {
	Role       string     `json:"role"`
	Content    any        `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// Text returns the message content as a string.
func (m Message) Text() string {
	if s, ok := m.Content.(string); ok {
		return s
	}
	return ""
}

// ToolCall is a tool call on the wire.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Request is the part of a chat completion request the tests look at.
type Request struct {
	Model    string            `json:"model"`
	Messages []Message         `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
	Stream   bool              `json:"stream"`
	// ResponseFormat is the requested format of the answer, as sent.
	ResponseFormat json.RawMessage `json:"response_format"`
	Header         http.Header     `json:"-"`
}

// Reply is what the fake model answers.
type Reply struct {
	Content   string
	ToolCalls []Call
	// Hold, when set, stops a streamed reply after its first content chunk
	// until the channel is closed: tests see deltas before the end.
	Hold <-chan struct{}
	// Wait, when set, delays a streamed reply's content until it is closed
	// (e.g. until a test's stream subscriber is connected).
	Wait <-chan struct{}
}

// Call is one tool call of a Reply.
type Call struct{ ID, Name, Arguments string }

// Server is a running fake.
type Server struct {
	fakeserver.Server[Request]
}

// Start starts a fake whose answers come from reply, and stops it when the test ends.
func Start(t testing.TB, reply func(Request) Reply) *Server {
	s := New(reply)
	t.Cleanup(s.Close)
	return s
}

// New starts a fake whose answers come from reply; Close stops it.
func New(reply func(Request) Reply) *Server {
	s := &Server{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		req.Header = r.Header.Clone()
		n := s.Record(req)
		rep := reply(req)
		id := fmt.Sprintf("chatcmpl-%d", n)
		if req.Stream {
			writeStream(w, id, req.Model, rep)
			return
		}
		writeJSON(w, id, req.Model, rep)
	})
	s.Listen(mux)
	return s
}

// BaseURL is the base URL to configure clients with.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

func wireCalls(rep Reply) []map[string]any {
	var out []map[string]any
	for i, c := range rep.ToolCalls {
		out = append(out, map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
	}
	return out
}

func finish(rep Reply) string {
	if len(rep.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func writeJSON(w http.ResponseWriter, id, model string, rep Reply) {
	msg := map[string]any{"role": "assistant", "content": rep.Content, "refusal": nil}
	if len(rep.ToolCalls) > 0 {
		msg["tool_calls"] = wireCalls(rep)
		if rep.Content == "" {
			msg["content"] = nil
		}
	}
	body := map[string]any{
		"id": id, "object": "chat.completion", "created": 1763800000, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish(rep)}},
		"usage":   map[string]any{"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-request-id", "req_"+id)
	json.NewEncoder(w).Encode(body)
}

func writeStream(w http.ResponseWriter, id, model string, rep Reply) {
	w.Header().Set("x-request-id", "req_"+id)
	sse := fakeserver.NewSSE(w)
	send := func(choices []any, usage any) {
		chunk := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1763800000, "model": model, "choices": choices}
		if usage != nil {
			chunk["usage"] = usage
		}
		sse.Send("", chunk)
	}
	delta := func(d map[string]any, fin any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "logprobs": nil, "finish_reason": fin}}
	}
	send(delta(map[string]any{"role": "assistant", "content": ""}, nil), nil)
	if rep.Wait != nil {
		<-rep.Wait
	}
	for i, piece := range strings.SplitAfter(rep.Content, " ") {
		if piece != "" {
			send(delta(map[string]any{"content": piece}, nil), nil)
		}
		if i == 0 && rep.Hold != nil {
			<-rep.Hold
		}
	}
	for i, c := range rep.ToolCalls {
		half := len(c.Arguments) / 2
		send(delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Arguments[:half]}}}}, nil), nil)
		send(delta(map[string]any{"tool_calls": []any{map[string]any{"index": i,
			"function": map[string]any{"arguments": c.Arguments[half:]}}}}, nil), nil)
	}
	send(delta(map[string]any{}, finish(rep)), nil)
	send([]any{}, map[string]any{"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18})
	sse.Raw("data: [DONE]\n\n")
}
