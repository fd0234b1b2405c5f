// Package openai adapts OpenAI's Chat Completions API, through the official
// openai-go SDK, to model.Model. Any OpenAI-compatible server (Ollama, vLLM,
// llama.cpp's server) works through Options.BaseURL.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/cairnhq/cairn/model"
)

// Options are the optional settings of a Model; nil means the defaults.
type Options struct {
	// BaseURL is the API's base URL; empty means OpenAI's.
	BaseURL string
	// APIKey is sent as a bearer token; local servers usually need none.
	APIKey string
	// Stream uses the streaming API, so text deltas reach Request.OnTextDelta
	// as they are generated.
	Stream bool
	// MaxRetries bounds the retries of 429, 5xx and connection errors (the
	// SDK's: exponential backoff with jitter, honouring Retry-After, under
	// the caller's context). nil means DefaultMaxRetries.
	MaxRetries *int
	// HTTPClient replaces the SDK's HTTP client. Its transport is wrapped
	// to apply Limits.
	HTTPClient *http.Client
	// Limits bound each call: its whole time, its silences and the size of
	// its reply (zero fields: model.DefaultTimeout and the others).
	Limits model.Limits
	// SDK builds requests and decodes replies with the SDK's own types
	// (the reference) instead of the lean path, which sends and reads the
	// same fields at a fraction of the cost. Both go through the SDK's
	// client: its retries, headers and errors. A streamed Chat Completion
	// is always read with the SDK's accumulator.
	SDK bool
}

// DefaultMaxRetries is the number of retries when Options.MaxRetries is nil.
const DefaultMaxRetries = 3

// Model is a model.Model backed by Chat Completions.
type Model struct {
	client  sdk.Client
	http    *http.Client // the client's (Limits applied)
	chat    *sender      // the lean path's
	name    string
	opts    Options
	retries int
}

var (
	_ model.Model   = (*Model)(nil)
	_ model.Limited = (*Model)(nil)
)

// Limits returns the limits of each call (Options.Limits).
func (m *Model) Limits() model.Limits { return m.opts.Limits }

// New returns a Model calling the model named name, e.g. "gpt-4o-mini" or "llama3.1". opts may
// be nil. Like the SDK, it falls back to the OPENAI_API_KEY
// and OPENAI_BASE_URL environment variables for an empty APIKey or BaseURL.
func New(name string, opts *Options) *Model {
	if opts == nil {
		opts = &Options{}
	}
	var ro []option.RequestOption
	if opts.APIKey != "" {
		ro = append(ro, option.WithAPIKey(opts.APIKey))
	}
	if opts.BaseURL != "" {
		ro = append(ro, option.WithBaseURL(opts.BaseURL))
	}
	retries := DefaultMaxRetries
	if opts.MaxRetries != nil {
		retries = *opts.MaxRetries
	}
	ro = append(ro, option.WithMaxRetries(retries))
	hc := opts.Limits.HTTPClient(opts.HTTPClient)
	ro = append(ro, option.WithHTTPClient(hc))
	m := &Model{client: sdk.NewClient(ro...), http: hc, name: name, opts: *opts, retries: retries}
	m.chat = newSender(&m.client, hc, "chat/completions")
	return m
}

// providerError describes a failed call: provider, model, status, request id.
func (m *Model) providerError(err error) error {
	var status int
	var requestID, message string
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		status, message = apiErr.StatusCode, apiErr.Message
		if apiErr.Response != nil {
			requestID = apiErr.Response.Header.Get("x-request-id")
		}
	}
	return model.NewProviderError("openai", m.name, err, status, requestID, message, m.retries)
}

// Generate implements model.Model.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if !m.opts.SDK && !m.opts.Stream {
		return m.generateLean(ctx, req)
	}
	params, err := m.params(req)
	if err != nil {
		return nil, err
	}
	if m.opts.Stream {
		return m.stream(ctx, req, params)
	}
	cc, err := m.client.Chat.Completions.New(ctx, params)
	if err != nil {
		return nil, m.providerError(err)
	}
	if cc == nil { // a reply of null
		cc = &sdk.ChatCompletion{}
	}
	if len(cc.Choices) == 0 {
		return nil, fmt.Errorf("openai %s: response %s has no choices", m.name, cc.ID)
	}
	return response(cc.Choices[0].Message, cc.Usage), nil
}

func (m *Model) stream(ctx context.Context, req *model.Request, params sdk.ChatCompletionNewParams) (*model.Response, error) {
	params.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)}
	s := m.client.Chat.Completions.NewStreaming(ctx, params)
	defer s.Close()
	var acc sdk.ChatCompletionAccumulator
	for s.Next() {
		chunk := s.Current()
		acc.AddChunk(chunk)
		if req.OnTextDelta != nil && len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			req.OnTextDelta(chunk.Choices[0].Delta.Content)
		}
	}
	if err := s.Err(); err != nil {
		return nil, m.providerError(err)
	}
	if len(acc.Choices) == 0 {
		return nil, fmt.Errorf("openai %s (streaming): the stream ended without a choice", m.name)
	}
	return response(acc.Choices[0].Message, acc.Usage), nil
}

func response(msg sdk.ChatCompletionMessage, usage sdk.CompletionUsage) *model.Response {
	out := model.Message{Role: model.RoleAssistant, Content: msg.Content}
	for _, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		out.ToolCalls = append(out.ToolCalls, model.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return &model.Response{Message: out, Usage: model.Usage{InputTokens: usage.PromptTokens, OutputTokens: usage.CompletionTokens}}
}

func (m *Model) params(req *model.Request) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{Model: shared.ChatModel(m.name)}
	if req.OutputSchema != nil {
		var schema map[string]any
		if err := json.Unmarshal(req.OutputSchema, &schema); err != nil {
			return p, fmt.Errorf("openai: output schema: %w", err)
		}
		// Not strict: Cairn's schemas need not list every property as
		// required; the engine checks the answer either way.
		p.ResponseFormat = sdk.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "output", Schema: schema, Strict: sdk.Bool(false)}}}
	}
	if req.System != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(req.System))
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case model.RoleUser:
			p.Messages = append(p.Messages, sdk.UserMessage(msg.Content))
		case model.RoleTool:
			p.Messages = append(p.Messages, sdk.ToolMessage(msg.Content, msg.ToolCallID))
		case model.RoleAssistant:
			a := sdk.ChatCompletionAssistantMessageParam{}
			if msg.Content != "" {
				a.Content.OfString = sdk.String(msg.Content)
			}
			for _, tc := range msg.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
					},
				})
			}
			p.Messages = append(p.Messages, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		default:
			return p, fmt.Errorf("openai: message role %q is not supported", msg.Role)
		}
	}
	for _, t := range req.Tools {
		var params shared.FunctionParameters
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &params); err != nil {
				return p, fmt.Errorf("openai: tool %q: parameters: %w", t.Name, err)
			}
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
		if t.Description != "" {
			def.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(def))
	}
	return p, nil
}

// Describe names the provider and model, for telemetry.
func (m *Model) Describe() (provider, name string) { return "openai", m.name }
