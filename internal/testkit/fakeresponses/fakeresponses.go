// Package fakeresponses is an OpenAI Responses API server for tests: it
// listens on 127.0.0.1 and speaks the real wire format (POST /v1/responses,
// JSON and the streaming event protocol), answering from a Go function.
//
// It enforces what an adapter can get wrong across a pause, as the API
// does: a function call sent back must come with the reasoning item that
// led to it, and with store false that item must carry the
// encrypted_content this server issued (it keeps nothing between requests,
// so any process may send the follow-up).
package fakeresponses

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/testkit/fakeserver"
)

// Item is an input item on the wire. A message sent in the easy form has
// no type.
type Item struct {
	Type             string          `json:"type"`
	ID               string          `json:"id,omitempty"`
	Role             string          `json:"role,omitempty"`
	Content          json.RawMessage `json:"content,omitempty"`
	CallID           string          `json:"call_id,omitempty"`
	Name             string          `json:"name,omitempty"`
	Arguments        string          `json:"arguments,omitempty"`
	Output           json.RawMessage `json:"output,omitempty"`
	EncryptedContent string          `json:"encrypted_content,omitempty"`
}

// Text returns a message's content as text (a string, or text parts).
func (it Item) Text() string {
	var s string
	if json.Unmarshal(it.Content, &s) == nil {
		return s
	}
	var parts []struct{ Text string }
	if json.Unmarshal(it.Content, &parts) != nil {
		return string(it.Content) // neither text nor parts: as sent
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// OutputText returns a function_call_output's output as text.
func (it Item) OutputText() string {
	var s string
	if json.Unmarshal(it.Output, &s) != nil {
		return string(it.Output) // not a JSON string: as sent
	}
	return s
}

// Request is the part of a request the tests look at.
type Request struct {
	Model     string            `json:"model"`
	Input     []Item            `json:"input"`
	Tools     []json.RawMessage `json:"tools"`
	Store     *bool             `json:"store"`
	Include   []string          `json:"include"`
	Stream    bool              `json:"stream"`
	Reasoning *struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
	Instructions string `json:"instructions"`
	// Text is the requested format of the answer, as sent.
	Text json.RawMessage `json:"text"`
}

// Last returns the last input item.
func (r Request) Last() Item { return r.Input[len(r.Input)-1] }

// Reply is what the fake model answers.
type Reply struct {
	// Reasoning, when set, comes first as a reasoning item (a summary of
	// it, and, when include asks, its encrypted content). With tool calls,
	// the item's id is derived from the first call's id: a follow-up that
	// sends that call must send this item before it.
	Reasoning string
	Text      string
	ToolCalls []Call
}

// Call is one function_call of a Reply.
type Call struct{ CallID, Name, Arguments string }

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

// BaseURL is the URL to give the SDK: the server's with /v1.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// New starts a fake answering from reply; Close stops it.
func New(reply func(Request) Reply) *Server {
	s := &Server{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", func(w http.ResponseWriter, r *http.Request) {
		var req Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			refuse(w, http.StatusBadRequest, err.Error())
			return
		}
		if status, msg := check(req); msg != "" {
			refuse(w, status, msg)
			return
		}
		n := s.Record(req)
		rep := reply(req)
		id := fmt.Sprintf("resp_%03d", n)
		w.Header().Set("x-request-id", "req_"+id)
		body := response(id, req, rep)
		if req.Stream {
			writeStream(w, body)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(body)
	})
	s.Listen(mux)
	return s
}

func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","param":"input","code":null}}`, msg)
}

// check enforces the rules of the API the adapter can get wrong. A
// reasoning model's function calls come back after the reasoning item that
// led to them, in the same assistant turn; this server derived that item's
// id from the turn's first call id, so it recognises it in any request.
func check(r Request) (int, string) {
	stored := r.Store == nil || *r.Store
	var turn string // the reasoning item of the assistant turn being read
	group := false  // a call of this turn was checked
	for _, it := range r.Input {
		switch it.Type {
		case "reasoning":
			if !stored && it.EncryptedContent == "" {
				return http.StatusNotFound, fmt.Sprintf("Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", it.ID)
			}
			if it.EncryptedContent != "" && it.EncryptedContent != encrypt(it.ID) {
				return http.StatusBadRequest, fmt.Sprintf("The encrypted content for item %s could not be verified.", it.ID)
			}
			turn, group = it.ID, false
		case "function_call":
			if r.Reasoning == nil || group {
				continue
			}
			if want := reasoningFor(it.CallID); turn != want {
				return http.StatusBadRequest, fmt.Sprintf("Item 'fc_%s' of type 'function_call' was provided without its required 'reasoning' item: '%s'.", it.CallID, want)
			}
			group = true
		case "function_call_output", "message", "": // an easy message has no type
			if it.Role != "assistant" {
				turn, group = "", false
			}
		}
	}
	return 0, ""
}

// reasoningFor is the id of the reasoning item that led to call id: the
// server derives it, so it recognises it in any later request.
func reasoningFor(callID string) string {
	m := hmac.New(sha256.New, []byte("fakeresponses reasoning"))
	m.Write([]byte(callID))
	return "rs_" + hex.EncodeToString(m.Sum(nil)[:12])
}

// encrypt is the encrypted_content of reasoning item id.
func encrypt(id string) string {
	m := hmac.New(sha256.New, []byte("fakeresponses encrypted content"))
	m.Write([]byte(id))
	return "gAAAA" + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// response is the Response object of rep.
func response(id string, req Request, rep Reply) map[string]any {
	var output []any
	if rep.Reasoning != "" {
		key := id
		if len(rep.ToolCalls) > 0 {
			key = rep.ToolCalls[0].CallID
		}
		rs := reasoningFor(key)
		item := map[string]any{"type": "reasoning", "id": rs,
			"summary": []any{map[string]any{"type": "summary_text", "text": rep.Reasoning}}}
		if slices.Contains(req.Include, "reasoning.encrypted_content") {
			item["encrypted_content"] = encrypt(rs)
		}
		output = append(output, item)
	}
	if rep.Text != "" {
		output = append(output, map[string]any{"type": "message", "id": "msg_" + id, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": rep.Text, "annotations": []any{}}}})
	}
	for _, c := range rep.ToolCalls {
		output = append(output, map[string]any{"type": "function_call", "id": "fc_" + c.CallID, "call_id": c.CallID,
			"name": c.Name, "arguments": c.Arguments, "status": "completed"})
	}
	return map[string]any{"id": id, "object": "response", "created_at": 1760000000, "status": "completed",
		"model": req.Model, "output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"usage": map[string]any{"input_tokens": 20, "output_tokens": 9, "total_tokens": 29,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 5}}}
}

// writeStream sends body as the streaming events a client accumulates:
// each output item added, its text in deltas, done; then the whole
// response completed.
func writeStream(w http.ResponseWriter, body map[string]any) {
	sse := fakeserver.NewSSE(w)
	seq := 0
	send := func(typ string, data map[string]any) {
		data["type"], data["sequence_number"] = typ, seq
		seq++
		sse.Send(typ, data)
	}
	created := map[string]any{}
	for k, v := range body {
		created[k] = v
	}
	created["status"], created["output"] = "in_progress", []any{}
	send("response.created", map[string]any{"response": created})
	for i, item := range body["output"].([]any) {
		it := item.(map[string]any)
		send("response.output_item.added", map[string]any{"output_index": i, "item": it})
		if it["type"] == "message" {
			text := it["content"].([]any)[0].(map[string]any)["text"].(string)
			for _, piece := range strings.SplitAfter(text, " ") {
				send("response.output_text.delta", map[string]any{"output_index": i, "content_index": 0, "item_id": it["id"], "delta": piece, "logprobs": []any{}})
			}
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	send("response.completed", map[string]any{"response": body})
}
