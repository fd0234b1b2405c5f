// Package anthropic adapts Anthropic's Messages API (tool use, streaming),
// through the official anthropic-sdk-go, to model.Model.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/cairnhq/cairn/model"
)

// Options are the optional settings of a Model; nil means the defaults.
type Options struct {
	// BaseURL is the API's base URL; empty means Anthropic's.
	BaseURL string
	// APIKey authenticates the requests.
	APIKey string
	// MaxTokens bounds each response; 0 means DefaultMaxTokens.
	MaxTokens int64
	// Stream uses the streaming API, so text deltas reach Request.OnTextDelta.
	Stream bool
	// MaxRetries bounds the SDK's retries of 429, 5xx and connection errors
	// (exponential backoff with jitter, honouring Retry-After, under the
	// caller's context); nil means DefaultMaxRetries.
	MaxRetries *int
	// HTTPClient replaces the SDK's HTTP client. Its transport is wrapped
	// to apply Limits.
	HTTPClient *http.Client
	// Limits bound each call: its whole time, its silences and the size of
	// its reply (zero fields: model.DefaultTimeout and the others).
	Limits model.Limits
	// Thinking, when set, turns on extended thinking. The thinking blocks
	// of each reply (signed, or redacted) are kept with the message
	// (model.Message.Provider) and sent back unchanged with the tool
	// results they led to, as the API requires, also after a pause, a
	// restart or a takeover.
	Thinking *Thinking
}

// Thinking configures extended thinking.
type Thinking struct {
	// BudgetTokens is how many tokens the model may think with: at least
	// 1024, and less than Options.MaxTokens.
	BudgetTokens int64
}

// providerName names this adapter's data in model.ProviderData.
const providerName = "anthropic"

// thinkingBlock is a thinking or redacted_thinking block as the API sends
// it and wants it back.
type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// DefaultMaxTokens bounds each response when Options.MaxTokens is 0.
const DefaultMaxTokens = 4096

// DefaultMaxRetries is the number of retries when Options.MaxRetries is nil.
const DefaultMaxRetries = 3

// Model is a model.Model backed by the Messages API.
type Model struct {
	client  sdk.Client
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

// New returns a Model calling the model named name, e.g. "claude-sonnet-4-5". opts may
// be nil.
func New(name string, opts *Options) *Model {
	if opts == nil {
		opts = &Options{}
	}
	retries := DefaultMaxRetries
	if opts.MaxRetries != nil {
		retries = *opts.MaxRetries
	}
	ro := []option.RequestOption{option.WithAPIKey(opts.APIKey), option.WithMaxRetries(retries)}
	if opts.BaseURL != "" {
		ro = append(ro, option.WithBaseURL(opts.BaseURL))
	}
	ro = append(ro, option.WithHTTPClient(opts.Limits.HTTPClient(opts.HTTPClient)))
	if opts.MaxTokens == 0 {
		opts.MaxTokens = DefaultMaxTokens
	}
	return &Model{client: sdk.NewClient(ro...), name: name, opts: *opts, retries: retries}
}

// Generate implements model.Model.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, err
	}
	if !m.opts.Stream {
		msg, err := m.client.Messages.New(ctx, params)
		if err != nil {
			return nil, m.providerError(err)
		}
		return response(msg), nil
	}
	s := m.client.Messages.NewStreaming(ctx, params)
	defer s.Close()
	var msg sdk.Message
	for s.Next() {
		ev := s.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, fmt.Errorf("anthropic %s (streaming): %w", m.name, err)
		}
		if req.OnTextDelta != nil && ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
			req.OnTextDelta(ev.Delta.Text)
		}
	}
	if err := s.Err(); err != nil {
		return nil, m.providerError(err)
	}
	return response(&msg), nil
}

func response(msg *sdk.Message) *model.Response {
	out := model.Message{Role: model.RoleAssistant}
	var thinking []thinkingBlock
	for _, block := range msg.Content {
		switch b := block.AsAny().(type) {
		case sdk.ThinkingBlock:
			thinking = append(thinking, thinkingBlock{Type: "thinking", Thinking: b.Thinking, Signature: b.Signature})
		case sdk.RedactedThinkingBlock:
			thinking = append(thinking, thinkingBlock{Type: "redacted_thinking", Data: b.Data})
		case sdk.TextBlock:
			out.Content += b.Text
		case sdk.ToolUseBlock:
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			out.ToolCalls = append(out.ToolCalls, model.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	if len(thinking) > 0 {
		data, _ := json.Marshal(thinking) // strings only: cannot fail
		out.Provider = &model.ProviderData{Name: providerName, Data: data}
	}
	return &model.Response{Message: out, Usage: model.Usage{InputTokens: msg.Usage.InputTokens, OutputTokens: msg.Usage.OutputTokens}}
}

func (m *Model) params(req *model.Request) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{Model: sdk.Model(m.name), MaxTokens: m.opts.MaxTokens}
	if m.opts.Thinking != nil {
		p.Thinking = sdk.ThinkingConfigParamOfEnabled(m.opts.Thinking.BudgetTokens)
	}
	if req.OutputSchema != nil {
		var schema map[string]any
		if err := json.Unmarshal(req.OutputSchema, &schema); err != nil {
			return p, fmt.Errorf("anthropic: output schema: %w", err)
		}
		p.OutputConfig = sdk.OutputConfigParam{Format: sdk.JSONOutputFormatParam{Schema: schema}}
	}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	// Anthropic wants alternating roles: consecutive messages of one role
	// (tool results, then a user message) become one message of blocks.
	var lastUser bool // role of the last message: true user, false assistant
	for i, msg := range req.Messages {
		var user bool
		var blocks []sdk.ContentBlockParamUnion
		switch msg.Role {
		case model.RoleUser:
			user, blocks = true, []sdk.ContentBlockParamUnion{sdk.NewTextBlock(msg.Content)}
		case model.RoleTool:
			user, blocks = true, []sdk.ContentBlockParamUnion{sdk.NewToolResultBlock(msg.ToolCallID, msg.Content, msg.IsError)}
		case model.RoleAssistant:
			if data := model.ProviderDataOf(msg, providerName); data != nil {
				var thinking []thinkingBlock
				if err := json.Unmarshal(data, &thinking); err != nil {
					return p, fmt.Errorf("anthropic: message %d: its kept thinking blocks do not decode: %w", i, err)
				}
				for _, t := range thinking {
					if t.Type == "redacted_thinking" {
						blocks = append(blocks, sdk.NewRedactedThinkingBlock(t.Data))
					} else {
						blocks = append(blocks, sdk.NewThinkingBlock(t.Signature, t.Thinking))
					}
				}
			}
			if msg.Content != "" {
				blocks = append(blocks, sdk.NewTextBlock(msg.Content))
			}
			for _, tc := range msg.ToolCalls {
				var input any = json.RawMessage(tc.Arguments)
				if !json.Valid([]byte(tc.Arguments)) {
					input = map[string]any{} // the engine already told the model its JSON was bad
				}
				blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, input, tc.Name))
			}
			if len(blocks) == 0 {
				blocks = append(blocks, sdk.NewTextBlock("(no answer)"))
			}
		default:
			return p, fmt.Errorf("anthropic: message role %q is not supported", msg.Role)
		}
		n := len(p.Messages)
		switch {
		case i > 0 && user == lastUser && user:
			p.Messages[n-1].OfUser.Content = append(p.Messages[n-1].OfUser.Content, blocks...)
		case i > 0 && user == lastUser:
			p.Messages[n-1].OfAssistant.Content = append(p.Messages[n-1].OfAssistant.Content, blocks...)
		case user:
			p.Messages = append(p.Messages, sdk.NewUserMessage(blocks...))
		default:
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(blocks...))
		}
		lastUser = user
	}
	for _, t := range req.Tools {
		var schema map[string]any
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return p, fmt.Errorf("anthropic: tool %q: parameters: %w", t.Name, err)
			}
		}
		in := sdk.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if s, ok := r.(string); ok {
					in.Required = append(in.Required, s)
				}
			}
		}
		for k, v := range schema {
			if k != "properties" && k != "required" && k != "type" {
				in.ExtraFields[k] = v
			}
		}
		tp := sdk.ToolParam{Name: t.Name, InputSchema: in}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &tp})
	}
	return p, nil
}

// providerError describes a failed call: provider, model, status, request id.
func (m *Model) providerError(err error) error {
	var status int
	var requestID, message string
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		status = apiErr.StatusCode
		if apiErr.Response != nil {
			requestID = apiErr.Response.Header.Get("request-id")
		}
		var body struct {
			Error struct{ Message string } `json:"error"`
		}
		if json.Unmarshal([]byte(apiErr.RawJSON()), &body) == nil {
			message = body.Error.Message
		}
	}
	return model.NewProviderError("anthropic", m.name, err, status, requestID, message, m.retries)
}

// Describe names the provider and model, for telemetry.
func (m *Model) Describe() (provider, name string) { return "anthropic", m.name }
