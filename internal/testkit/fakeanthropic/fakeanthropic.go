// Package fakeanthropic is an Anthropic Messages API server for tests: it
// listens on 127.0.0.1 and speaks the real wire format (JSON and the
// streaming event protocol), answering from a Go function.
//
// It enforces the rules an adapter can get wrong, as the API does: roles
// alternate, content is not empty, and, with extended thinking on, the
// assistant turn that led to the tool results being sent must start with
// the thinking blocks the server issued, their signatures intact.
package fakeanthropic

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/testkit/fakeserver"
)

// Block is a content block on the wire.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   any             `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// Thinking and Signature are a thinking block's; Data is a
	// redacted_thinking block's.
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// ContentText returns a tool_result's content: a string, or text blocks.
func (b Block) ContentText() string {
	switch c := b.Content.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, x := range c {
			if m, ok := x.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					parts = append(parts, t)
				}
			}
		}
		return strings.Join(parts, "")
	}
	return ""
}

// Message is a message on the wire.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Request is the part of a request the tests look at.
type Request struct {
	Model     string            `json:"model"`
	MaxTokens int               `json:"max_tokens"`
	System    []Block           `json:"system"`
	Messages  []Message         `json:"messages"`
	Tools     []json.RawMessage `json:"tools"`
	Stream    bool              `json:"stream"`
	Thinking  *ThinkingConfig   `json:"thinking"`
	// OutputConfig is the requested format of the answer, as sent.
	OutputConfig json.RawMessage `json:"output_config"`
	Header       http.Header     `json:"-"`
}

// LastBlock returns the last content block of the last message.
func (r Request) LastBlock() Block {
	m := r.Messages[len(r.Messages)-1]
	return m.Content[len(m.Content)-1]
}

// ThinkingConfig is a request's thinking setting.
type ThinkingConfig struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

// Reply is what the fake model answers.
type Reply struct {
	Text      string
	ToolCalls []Call
	// Thinking, when set, comes first as a signed thinking block; Redacted
	// adds a redacted_thinking block after it.
	Thinking string
	Redacted bool
}

// Call is one tool_use block of a Reply.
type Call struct{ ID, Name, Input string }

// Server is a running fake.
type Server struct {
	fakeserver.Server[Request]
}

// Start starts a fake answering from reply; it stops when the test ends.
func Start(t testing.TB, reply func(Request) Reply) *Server {
	s := New(reply)
	t.Cleanup(s.Close)
	return s
}

// New starts a fake answering from reply; Close stops it.
func New(reply func(Request) Reply) *Server {
	s := &Server{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) {
		var req Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, err.Error())
			return
		}
		if msg := check(req); msg != "" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, msg)
			return
		}
		req.Header = r.Header.Clone()
		n := s.Record(req)
		rep := reply(req)
		id := fmt.Sprintf("msg_%03d", n)
		w.Header().Set("request-id", "req_"+id)
		if req.Stream {
			writeStream(w, id, req.Model, rep)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": req.Model,
			"content": blocks(rep), "stop_reason": stopReason(rep), "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 12, "output_tokens": 6},
		})
	})
	s.Listen(mux)
	return s
}

// check enforces the API's rules that an adapter can get wrong.
func check(r Request) string {
	if r.MaxTokens <= 0 {
		return "max_tokens: field required"
	}
	for i, m := range r.Messages {
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if m.Role != want {
			return fmt.Sprintf("messages: roles must alternate user/assistant, message %d is %s", i, m.Role)
		}
		if len(m.Content) == 0 {
			return fmt.Sprintf("messages.%d: content must not be empty", i)
		}
	}
	if r.Thinking == nil || r.Thinking.Type != "enabled" {
		return ""
	}
	if r.Thinking.BudgetTokens < 1024 || r.Thinking.BudgetTokens >= r.MaxTokens {
		return "thinking.budget_tokens: must be at least 1024 and less than max_tokens"
	}
	// The last assistant message, when tool results follow it, is the turn
	// going on: it must start with its thinking, as issued.
	n := len(r.Messages)
	if n < 2 || !hasToolResult(r.Messages[n-1]) {
		return ""
	}
	a := r.Messages[n-2]
	first := a.Content[0]
	if first.Type != "thinking" && first.Type != "redacted_thinking" {
		return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`.", n-2, first.Type)
	}
	for j, b := range a.Content {
		switch {
		case b.Type == "thinking" && b.Signature != sign(b.Thinking):
			return fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", n-2, j)
		case b.Type == "redacted_thinking" && !redactedValid(b.Data):
			return fmt.Sprintf("messages.%d.content.%d: Invalid `data` in `redacted_thinking` block", n-2, j)
		}
	}
	return ""
}

func hasToolResult(m Message) bool {
	for _, b := range m.Content {
		if b.Type == "tool_result" {
			return true
		}
	}
	return false
}

// keyText signs the thinking this fake issues, so that it recognises its own
// blocks in any later request, from any process, without keeping them.
const keyText = "fakeanthropic thinking signatures"

func sign(thinking string) string {
	m := hmac.New(sha256.New, []byte(keyText))
	m.Write([]byte(thinking))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// redacted returns a redacted_thinking block's data: a nonce and its MAC.
func redacted() string {
	nonce := make([]byte, 16)
	rand.Read(nonce)
	m := hmac.New(sha256.New, []byte(keyText))
	m.Write(nonce)
	return base64.StdEncoding.EncodeToString(append(nonce, m.Sum(nil)...))
}

func redactedValid(data string) bool {
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil || len(b) != 16+sha256.Size {
		return false
	}
	m := hmac.New(sha256.New, []byte(keyText))
	m.Write(b[:16])
	return hmac.Equal(m.Sum(nil), b[16:])
}

func blocks(rep Reply) []any {
	var out []any
	if rep.Thinking != "" {
		out = append(out, map[string]any{"type": "thinking", "thinking": rep.Thinking, "signature": sign(rep.Thinking)})
	}
	if rep.Redacted {
		out = append(out, map[string]any{"type": "redacted_thinking", "data": redacted()})
	}
	if rep.Text != "" {
		out = append(out, map[string]any{"type": "text", "text": rep.Text})
	}
	for _, c := range rep.ToolCalls {
		out = append(out, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(c.Input)})
	}
	return out
}

func stopReason(rep Reply) string {
	if len(rep.ToolCalls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func writeStream(w http.ResponseWriter, id, model string, rep Reply) {
	sse := fakeserver.NewSSE(w)
	send := func(typ string, data map[string]any) {
		data["type"] = typ
		sse.Send(typ, data)
	}
	send("message_start", map[string]any{"message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 12, "output_tokens": 1}}})
	index := 0
	if rep.Thinking != "" {
		send("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		for _, piece := range strings.SplitAfter(rep.Thinking, " ") {
			send("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "thinking_delta", "thinking": piece}})
		}
		send("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "signature_delta", "signature": sign(rep.Thinking)}})
		send("content_block_stop", map[string]any{"index": index})
		index++
	}
	if rep.Redacted {
		send("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "redacted_thinking", "data": redacted()}})
		send("content_block_stop", map[string]any{"index": index})
		index++
	}
	if rep.Text != "" {
		send("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, piece := range strings.SplitAfter(rep.Text, " ") {
			send("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "text_delta", "text": piece}})
		}
		send("content_block_stop", map[string]any{"index": index})
		index++
	}
	for _, c := range rep.ToolCalls {
		send("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
		half := len(c.Input) / 2
		send("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": c.Input[:half]}})
		send("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": c.Input[half:]}})
		send("content_block_stop", map[string]any{"index": index})
		index++
	}
	send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stopReason(rep), "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 6}})
	send("message_stop", map[string]any{})
}
