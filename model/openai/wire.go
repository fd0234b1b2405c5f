package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unsafe"

	sdk "github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"
)

// The wire types below are the lean path: requests built with
// encoding/json from small structs, and replies read with gjson (as the
// SDK's own decoders read them), of only the fields Cairn sends and reads,
// instead of the SDK's typed params and reflective decoders (apijson),
// which cost more than the HTTP exchange itself on a busy server. The SDK
// still carries every request (its retries, backoff, Retry-After, auth
// headers and *openai.Error), and its types stay the reference: the
// differential tests (wire_test.go) hold the two paths to the same
// requests and the same replies. Options.SDK switches back to them.

// The Responses API.

// responsesRequest is the body of POST /responses.
type responsesRequest struct {
	Model             string              `json:"model"`
	Input             []any               `json:"input,omitempty"`
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
	Parameters  json.RawMessage `json:"parameters,omitempty"`
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

// responsesEvent is a streamed event as sent; Cairn reads it with gjson
// like the reply (Responses.decode).
type responsesEvent struct{ raw []byte }

func (e *responsesEvent) UnmarshalJSON(b []byte) error {
	e.raw = b
	return nil
}

// post sends body to the API's path through the SDK's client (its
// retries, headers and errors) and reads the answer whole, into a buffer
// of the size the answer announces (the SDK's io.ReadAll grows one from
// 512 bytes, five allocations for a small reply).
func post(ctx context.Context, client *sdk.Client, path string, body []byte) ([]byte, error) {
	var resp *http.Response
	if err := client.Post(ctx, path, body, &resp); err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if n := resp.ContentLength; n > 0 && n <= maxSizedRead {
		buf := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			return nil, fmt.Errorf("error reading response body: %w", err)
		}
		return buf, nil
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("error reading response body: %w", err)
	}
	return raw, nil
}

// maxSizedRead bounds the buffer an announced length allocates up front;
// a longer answer is read as it comes (model.Limits bounds it either way).
const maxSizedRead = 1 << 20

// jsonObject accepts what the SDK's params accept where they decode a
// schema into a map: nothing, null, or a JSON object.
func jsonObject(b json.RawMessage) error {
	if len(b) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m)
}

// parse checks that b is one JSON object (or null), as the SDK's client
// does before its decoders read it, and returns it for gjson's reads —
// the reads the SDK's decoders make: keys matched exactly (the first of
// duplicates), a number or a literal read as a string is its text, an
// object or array its raw JSON, a member of an unexpected type zero.
func parse(b []byte) (gjson.Result, error) {
	if !gjson.ValidBytes(b) {
		return gjson.Result{}, errors.New("the body is not JSON")
	}
	// Read in place (gjson.ParseBytes would copy the body into a string):
	// b is not changed while the results are read, and what is kept of
	// them is cloned (text), so that a kept call id does not hold the
	// whole reply in memory.
	r := gjson.Parse(unsafe.String(unsafe.SliceData(b), len(b)))
	if !r.IsObject() && r.Type != gjson.Null {
		return gjson.Result{}, fmt.Errorf("the body is a JSON %s, not an object", r.Type)
	}
	return r, nil
}

// text is r as a string of its own (see parse).
func text(r gjson.Result) string { return strings.Clone(r.String()) }

// each calls f with each element of an array of objects (and nulls), as
// the SDK's decoders see it, until f returns false: nothing for anything
// else, and nothing for an array with any other element (the SDK drops
// such an array whole).
func each(r gjson.Result, f func(gjson.Result) bool) {
	if !r.IsArray() {
		return
	}
	objects := true
	r.ForEach(func(_, v gjson.Result) bool {
		objects = v.IsObject() || v.Type == gjson.Null
		return objects
	})
	if objects {
		r.ForEach(func(_, v gjson.Result) bool { return f(v) })
	}
}

// schemaOrNothing is a schema as the SDK sends it: none for nothing or
// null (its map is nil then).
func schemaOrNothing(b json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(b); len(t) == 0 || string(t) == "null" {
		return nil
	}
	return b
}
