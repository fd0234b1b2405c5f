// Package model defines the provider-neutral conversation types Cairn speaks and
// the Model interface that providers (OpenAI, scripted, …) implement.
//
// A Model turns a Request (system prompt, history, tool definitions) into one
// assistant Message. Adapters translate to and from their provider's wire
// format; nothing else in Cairn knows a provider exists.
package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Role says who wrote a message.
type Role string

// The roles of a conversation.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a conversation history.
type Message struct {
	Role Role `json:"role"`
	// Content is the text of the message. For a tool message it is the tool's result.
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for, in the model's order.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// IsError marks a tool message that reports a failure (unknown tool, bad
	// arguments, rejection, a tool error). Providers that have no such flag
	// send the content as is.
	IsError bool `json:"is_error,omitempty"`
	// Agent names the agent that wrote an assistant message (set by Cairn
	// when it records one). A conversation handed off to another agent
	// keeps it, so a model can tell its own messages from the previous
	// agent's. Providers do not send it.
	Agent string `json:"agent,omitempty"`
	// Provider is what the provider that wrote an assistant message needs
	// back, unchanged, on later calls: Anthropic's thinking blocks with
	// their signatures, the OpenAI Responses API's reasoning items, Gemini's
	// thought signatures. Cairn stores it with the message and never reads
	// it; an adapter sends back only its own provider's data, so a session
	// that moves to another provider drops it.
	Provider *ProviderData `json:"provider_data,omitempty"`
}

// ProviderData is a provider's own part of an assistant message, kept as
// the adapter wrote it (see Message.Provider).
type ProviderData struct {
	// Name is the provider that wrote it: "anthropic", "openai-responses",
	// "gemini". An adapter ignores data of another name.
	Name string `json:"name"`
	// Data is the adapter's encoding of what it must send back: the
	// provider's own JSON, its signatures and encrypted content intact.
	Data json.RawMessage `json:"data"`
}

// ProviderDataOf returns the data of provider name that msg carries, or
// nil when it carries none (or another provider's).
func ProviderDataOf(msg Message, name string) json.RawMessage {
	if msg.Provider == nil || msg.Provider.Name != name {
		return nil
	}
	return msg.Provider.Data
}

// ToolCall is a model's request to run one tool.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the argument JSON exactly as the model produced it. It may
	// be malformed; the engine, not the adapter, decides what to do then.
	Arguments string `json:"arguments"`
}

// ToolDefinition describes a tool to the model.
type ToolDefinition struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema of the arguments
}

// Request is one call to a model.
type Request struct {
	// Agent names the agent the call is for.
	Agent string
	// System is the system prompt (the agent's instructions).
	System   string
	Messages []Message
	Tools    []ToolDefinition
	// OutputSchema, when set, is the JSON Schema the final answer must
	// match. Adapters ask for it the provider's way (a JSON schema response
	// format); the engine checks the answer whatever the provider did.
	OutputSchema json.RawMessage `json:",omitempty"`
	// OnTextDelta, when set, receives text as a streaming model produces it,
	// only while Generate runs (the runtime reuses it for the turn's next
	// call). The returned Response still holds the whole message.
	OnTextDelta func(delta string) `json:"-"`
}

// Usage counts the tokens of one model call.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Response is a model's answer: one assistant message.
type Response struct {
	Message Message
	Usage   Usage
}

// Model is a language model. Implementations must be safe for concurrent use.
type Model interface {
	Generate(ctx context.Context, req *Request) (*Response, error)
}

// Func adapts a function to the Model interface.
type Func func(ctx context.Context, req *Request) (*Response, error)

// Generate calls f.
func (f Func) Generate(ctx context.Context, req *Request) (*Response, error) { return f(ctx, req) }

// ProviderError is a model call the provider refused or failed, after any
// retries: it names the provider, the HTTP status and the request id.
//
// It is recorded with a failed turn (session.Failure.Provider), so its JSON
// form is part of the HTTP API; Err, the underlying error, is not recorded.
type ProviderError struct {
	Provider  string `json:"provider"`             // "openai", "anthropic"
	Model     string `json:"model"`                //
	Status    int    `json:"status"`               // HTTP status, 0 for a transport error
	RequestID string `json:"request_id,omitempty"` // the provider's request id, when it sent one
	Attempts  int    `json:"attempts"`             // requests made, retries included
	Message   string `json:"message,omitempty"`    // the provider's message
	// Code is set when one of the model's Limits ended the call:
	// CodeReplyTooLarge or CodeTimeout.
	Code string `json:"code,omitempty"`
	Err  error  `json:"-"` // the underlying error
}

// Error describes the failure in one line.
func (e *ProviderError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: ", e.Provider, e.Model)
	if e.Status != 0 {
		fmt.Fprintf(&b, "HTTP %d", e.Status)
	} else if e.Code == "" {
		b.WriteString("request failed")
	} else {
		b.WriteString(e.Code)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request %s)", e.RequestID)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	} else if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ProviderError) Unwrap() error { return e.Err }

// NewProviderError describes a failed call made with retries allowed: a
// cancelled or expired context is returned as is; status 0 means the
// request never got an HTTP answer. Statuses that are not retried (4xx but
// 408, 409, 429) count one attempt; the others retries+1.
func NewProviderError(provider, modelName string, err error, status int, requestID, message string, retries int) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	pe := &ProviderError{Provider: provider, Model: modelName, Status: status, RequestID: requestID, Message: message, Err: err, Attempts: retries + 1}
	if le := (*LimitError)(nil); errors.As(err, &le) {
		pe.Code, pe.Message = le.Code, le.Error()
		if le.Code == CodeReplyTooLarge || le.InAnswer {
			pe.Attempts = 1 // an answer being read is not retried
		}
		return pe
	}
	if status != 0 {
		if pe.Message == "" {
			pe.Message = http.StatusText(status)
		}
		if retryable := status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500; !retryable {
			pe.Attempts = 1
		}
	}
	return pe
}
