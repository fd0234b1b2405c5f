package openai

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// The wire types below are the lean path: requests built and replies
// decoded with encoding/json into only the fields Cairn sends and reads,
// instead of the SDK's typed params and reflective decoders (apijson),
// which cost more than the HTTP exchange itself on a busy server. The SDK
// still carries every request (its retries, backoff, Retry-After, auth
// headers and *openai.Error), and its types stay the reference: the
// differential tests (wire_test.go) hold the two paths to the same
// requests and the same replies. Options.SDK switches back to them.

// str decodes a JSON string leniently, as the SDK does: null is "", a
// number or a literal is its text, an object or an array its raw JSON (a
// server that sends a tool call's arguments as an object).
type str string

func (s *str) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = str(v)
	case string(b) == "null":
		*s = ""
	default:
		*s = str(b)
	}
	return nil
}

// count decodes a token count leniently, as the SDK does: a number (its
// integer part) or a string holding one; anything else is 0.
type count int64

func (c *count) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(b, `"`)
	if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		*c = count(n)
		return nil
	}
	if f, err := strconv.ParseFloat(string(b), 64); err == nil {
		*c = count(f)
		return nil
	}
	*c = 0
	return nil
}

// The Responses API.

// responsesRequest is the body of POST /responses.
type responsesRequest struct {
	Model             string              `json:"model"`
	Input             []any               `json:"input"`
	Instructions      string              `json:"instructions,omitempty"`
	Tools             []responsesTool     `json:"tools,omitempty"`
	ParallelToolCalls bool                `json:"parallel_tool_calls"`
	Store             bool                `json:"store"`
	Include           []string            `json:"include,omitempty"`
	Reasoning         *responsesReasoning `json:"reasoning,omitempty"`
	MaxOutputTokens   int64               `json:"max_output_tokens,omitempty"`
	Text              *responsesText      `json:"text,omitempty"`
	Stream            bool                `json:"stream,omitempty"`
}

type responsesReasoning struct {
	Effort string `json:"effort"`
}

type responsesText struct {
	Format responsesFormat `json:"format"`
}

type responsesFormat struct {
	Type   string          `json:"type"`
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

// easyMessage is an input message of text (the SDK sends it without a
// type).
type easyMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type functionCallInput struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type functionCallOutput struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

// responsesReply is what Cairn reads of a Response.
type responsesReply struct {
	Output []json.RawMessage `json:"output"`
	Usage  struct {
		InputTokens  count `json:"input_tokens"`
		OutputTokens count `json:"output_tokens"`
	} `json:"usage"`
}

// outputItem is what Cairn reads of an output item.
type outputItem struct {
	Type    str `json:"type"`
	Content []struct {
		Type str `json:"type"`
		Text str `json:"text"`
	} `json:"content"`
	CallID    str `json:"call_id"`
	Name      str `json:"name"`
	Arguments str `json:"arguments"`
}

// responsesEvent is what Cairn reads of a streamed event, and the event as
// sent (for errors).
type responsesEvent struct {
	Type     str             `json:"type"`
	Delta    str             `json:"delta"`
	Response json.RawMessage `json:"response"`
	raw      []byte
}

func (e *responsesEvent) UnmarshalJSON(b []byte) error {
	type plain responsesEvent
	if err := json.Unmarshal(b, (*plain)(e)); err != nil {
		return err
	}
	e.raw = b
	return nil
}

// jsonObject accepts what the SDK's params accept where they decode a
// schema into a map: nothing, null, or a JSON object.
func jsonObject(b json.RawMessage) error {
	if len(b) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m)
}

func nullIfEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}
