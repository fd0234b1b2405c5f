// Package fakegemini is a Gemini API server for tests: it listens on
// 127.0.0.1 and speaks the real wire format (generateContent, and
// streamGenerateContent as server-sent events), answering from a Go
// function.
//
// It enforces what an adapter can get wrong across a pause, as the API
// does: the function calls of the model turn that the function responses
// answer must come back with the thought signature this server put on the
// first of them (it keeps nothing between requests, so any process may
// send the follow-up).
package fakegemini

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/testkit/fakeserver"
)

// Part is a part on the wire.
type Part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// FunctionCall is a part's call.
type FunctionCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args,omitempty"`
}

// FunctionResponse is a part's answer to a call.
type FunctionResponse struct {
	ID       string         `json:"id,omitempty"`
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

// Content is one turn.
type Content struct {
	Role  string `json:"role"`
	Parts []Part `json:"parts"`
}

// Request is the part of a request the tests look at.
type Request struct {
	Model             string            `json:"-"`
	Stream            bool              `json:"-"`
	Contents          []Content         `json:"contents"`
	SystemInstruction *Content          `json:"systemInstruction"`
	Tools             []json.RawMessage `json:"tools"`
	GenerationConfig  struct {
		ThinkingConfig *struct {
			ThinkingBudget *int `json:"thinkingBudget"`
		} `json:"thinkingConfig"`
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

// Responses returns the function responses of the last turn.
func (r Request) Responses() []FunctionResponse {
	var out []FunctionResponse
	for _, p := range r.Contents[len(r.Contents)-1].Parts {
		if p.FunctionResponse != nil {
			out = append(out, *p.FunctionResponse)
		}
	}
	return out
}

// Reply is what the fake model answers.
type Reply struct {
	// Thought, when set, comes first as a thought summary part.
	Thought   string
	Text      string
	ToolCalls []Call
}

// Call is one functionCall part of a Reply. The first call of a reply
// carries a thought signature.
type Call struct {
	Name string
	Args map[string]any
}

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
	mux.HandleFunc("POST /v1beta/models/{call}", func(w http.ResponseWriter, r *http.Request) {
		name, method, _ := strings.Cut(r.PathValue("call"), ":")
		var req Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			refuse(w, err.Error())
			return
		}
		req.Model, req.Stream = name, method == "streamGenerateContent"
		if msg := check(req); msg != "" {
			refuse(w, msg)
			return
		}
		n := s.Record(req)
		rep := reply(req)
		parts := parts(rep)
		usage := map[string]any{"promptTokenCount": 15, "candidatesTokenCount": 7, "thoughtsTokenCount": 4, "totalTokenCount": 26}
		id := fmt.Sprintf("resp_%03d", n)
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(chunk(parts, "STOP", usage, name, id))
			return
		}
		sse := fakeserver.NewSSE(w)
		send := func(c map[string]any) {
			b, _ := json.Marshal(c)
			sse.Raw(fmt.Sprintf("data: %s\r\n\r\n", b)) // Google's stream ends its events with CRLF
		}
		for i, p := range parts {
			if i == len(parts)-1 {
				send(chunk([]Part{p}, "STOP", usage, name, id))
				break
			}
			send(chunk([]Part{p}, "", nil, name, id))
		}
	})
	s.Listen(mux)
	return s
}

func chunk(parts []Part, finish string, usage map[string]any, model, id string) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish != "" {
		cand["finishReason"] = finish
	}
	c := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": id}
	if usage != nil {
		c["usageMetadata"] = usage
	}
	return c
}

func refuse(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `{"error":{"code":400,"message":%q,"status":"INVALID_ARGUMENT"}}`, msg)
}

// check enforces the thought signature rule: the model turn just before
// a turn of function responses must carry, on its first function call,
// the signature this server gave it.
func check(r Request) string {
	n := len(r.Contents)
	if n < 2 || len(r.Responses()) == 0 {
		return ""
	}
	prev := r.Contents[n-2]
	for i, p := range prev.Parts {
		if p.FunctionCall == nil {
			continue
		}
		if p.ThoughtSignature != sign(p.FunctionCall.Name) {
			return fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", p.FunctionCall.Name, i+1)
		}
		return "" // only the first call of a turn carries one
	}
	return ""
}

// sign is the thought signature of a turn whose first call is name.
func sign(name string) string {
	m := hmac.New(sha256.New, []byte("fakegemini thought signatures"))
	m.Write([]byte(name))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func parts(rep Reply) []Part {
	var out []Part
	if rep.Thought != "" {
		out = append(out, Part{Text: rep.Thought, Thought: true})
	}
	if rep.Text != "" {
		for _, piece := range strings.SplitAfter(rep.Text, " ") {
			out = append(out, Part{Text: piece})
		}
	}
	for i, c := range rep.ToolCalls {
		p := Part{FunctionCall: &FunctionCall{Name: c.Name, Args: c.Args}}
		if i == 0 {
			p.ThoughtSignature = sign(c.Name)
		}
		out = append(out, p)
	}
	return out
}
