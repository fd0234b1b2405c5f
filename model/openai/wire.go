package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"unsafe"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"
)

// The wire types below are the lean path: requests built with
// encoding/json from small structs, and replies read with gjson (as the
// SDK's own decoders read them), of only the fields Cairn sends and reads,
// instead of the SDK's typed params and reflective decoders (apijson),
// which cost more than the HTTP exchange itself on a busy server. The SDK
// still decides every request and every failure (sender: its URL and
// headers, its retries, backoff, Retry-After and *openai.Error), and its
// types stay the reference: the
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

// sender sends a lean path's requests to one path of the API. The SDK's
// client stays in charge of what a request is and of every failure; only
// the request that succeeds at once skips its machinery (building the
// request config, cloning the request and its headers at each attempt:
// more than a third of the bytes a server allocates per approval cycle,
// and about 7 % of its CPU at one client — docs/performance.md):
//
//   - The first request goes through the SDK's client, and a middleware
//     watching its first attempt learns the URL and the headers the SDK
//     sends (the reference; TestLeanRequestsAreTheSDKs compares them).
//   - Later requests are sent with those, by the SDK's HTTP client (its
//     transport, Limits, proxy), redirects not followed.
//   - An attempt that does not succeed (a transport error, or a status
//     other than 2xx) is handed to the SDK's client as its own first
//     attempt, replayed by a middleware: its retries, Retry-After, backoff
//     and *openai.Error are the SDK's, over the same requests on the wire
//     (TestFailuresAreTheSDKs). A redirect is left to the SDK whole.
type sender struct {
	client  *sdk.Client
	http    *http.Client
	path    string
	learned atomic.Pointer[learnedRequest]
}

// learnedRequest is what the SDK sends for a path: its URL and headers.
type learnedRequest struct {
	url    string
	header http.Header
}

func newSender(client *sdk.Client, hc *http.Client, path string) *sender {
	direct := *hc
	direct.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &sender{client: client, http: &direct, path: path}
}

// post sends body and reads the answer whole (see read).
func (s *sender) post(ctx context.Context, body []byte) ([]byte, error) {
	l := s.learned.Load()
	if l == nil {
		return s.viaSDK(ctx, body, func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			if req.Header.Get("X-Stainless-Retry-Count") == "0" {
				s.learned.CompareAndSwap(nil, &learnedRequest{url: req.URL.String(), header: req.Header.Clone()})
			}
			return next(req)
		})
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := s.send(req, l.header)
	switch {
	case err == nil && resp.StatusCode >= 200 && resp.StatusCode < 300:
		return read(resp)
	case err == nil && resp.StatusCode >= 300 && resp.StatusCode < 400:
		resp.Body.Close()
		return s.viaSDK(ctx, body, nil)
	}
	replayed := false
	return s.viaSDK(ctx, body, func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		if !replayed {
			replayed = true
			return resp, err
		}
		return next(req)
	})
}

// send sends req with header. A client that only carries requests (no
// cookie jar, no timeout of its own, no credentials in the URL: the
// providers' case) is skipped for its transport, as the SDK's client
// would not follow a redirect here either: http.Client.Do copies every
// request's headers for the redirects it may follow, and a jar adds to
// them. Its errors are the client's: a *url.Error of the method and URL.
func (s *sender) send(req *http.Request, header http.Header) (*http.Response, error) {
	if s.http.Jar != nil || s.http.Timeout != 0 || req.URL.User != nil || s.http.Transport == nil {
		req.Header = header.Clone()
		return s.http.Do(req)
	}
	req.Header = header // read, never written, from here on
	resp, err := s.http.Transport.RoundTrip(req)
	if err != nil {
		return nil, &url.Error{Op: "Post", URL: req.URL.String(), Err: err}
	}
	return resp, nil
}

// viaSDK sends body through the SDK's client, with a middleware if mw is
// not nil.
func (s *sender) viaSDK(ctx context.Context, body []byte, mw option.Middleware) ([]byte, error) {
	var opts []option.RequestOption
	if mw != nil {
		opts = append(opts, option.WithMiddleware(mw))
	}
	var resp *http.Response
	if err := s.client.Post(ctx, s.path, body, &resp, opts...); err != nil {
		return nil, err
	}
	return read(resp)
}

// read reads a successful answer whole, into a buffer of the size the
// answer announces (io.ReadAll grows one from 512 bytes, five allocations
// for a small reply).
func read(resp *http.Response) ([]byte, error) {
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
