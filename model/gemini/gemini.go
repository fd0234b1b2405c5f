// Package gemini adapts Google's Gemini API (generateContent, through the
// official google.golang.org/genai SDK, on the Gemini API or Vertex AI) to
// model.Model: tools with parallel function calls, streaming, thinking,
// and thought signatures kept across pauses.
package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"google.golang.org/genai"

	"github.com/cairnhq/cairn/model"
)

// Provider names this adapter in model.ProviderData, errors and telemetry.
const Provider = "gemini"

// DefaultMaxRetries is the number of retries when Options.MaxRetries is nil.
const DefaultMaxRetries = 3

// Options are the optional settings of a Model; nil means the defaults.
type Options struct {
	// BaseURL is the API's base URL; empty means Google's.
	BaseURL string
	// APIKey authenticates to the Gemini API. Empty: the SDK reads
	// GEMINI_API_KEY or GOOGLE_API_KEY.
	APIKey string
	// Vertex uses Vertex AI instead of the Gemini API, in Project and
	// Location, with Application Default Credentials.
	Vertex            bool
	Project, Location string
	// Stream uses streamGenerateContent, so text deltas reach
	// Request.OnTextDelta as they are generated.
	Stream bool
	// MaxRetries bounds the retries of 408, 429 and 5xx (the SDK's, with
	// exponential backoff); nil means DefaultMaxRetries.
	MaxRetries *int
	// MaxOutputTokens bounds each response; 0 means the model's limit.
	MaxOutputTokens int32
	// Thinking, when set, configures the model's thinking.
	Thinking *Thinking
	// HTTPClient replaces the SDK's HTTP client. Its transport is wrapped
	// to apply Limits.
	HTTPClient *http.Client
	// Limits bound each call: its whole time, its silences and the size of
	// its reply (zero fields: model.DefaultTimeout and the others).
	Limits model.Limits
}

// Thinking configures a model's thinking.
type Thinking struct {
	// BudgetTokens is how many tokens the model may think with; 0 turns
	// thinking off, -1 lets the model decide.
	BudgetTokens int32
}

// Model is a model.Model backed by the Gemini API.
type Model struct {
	name    string
	opts    Options
	retries int

	once    sync.Once
	client  *genai.Client
	initErr error
}

var (
	_ model.Model   = (*Model)(nil)
	_ model.Limited = (*Model)(nil)
)

// New returns a Model calling the model named name, e.g. "gemini-2.5-flash".
// opts may be nil. The client is made on the first call.
func New(name string, opts *Options) *Model {
	if opts == nil {
		opts = &Options{}
	}
	retries := DefaultMaxRetries
	if opts.MaxRetries != nil {
		retries = *opts.MaxRetries
	}
	return &Model{name: name, opts: *opts, retries: retries}
}

// Limits returns the limits of each call (Options.Limits).
func (m *Model) Limits() model.Limits { return m.opts.Limits }

// Describe names the provider and model, for telemetry.
func (m *Model) Describe() (provider, name string) { return Provider, m.name }

func (m *Model) clientFor(ctx context.Context) (*genai.Client, error) {
	m.once.Do(func() {
		attempts := int32(m.retries + 1)
		cfg := &genai.ClientConfig{APIKey: m.opts.APIKey, Backend: genai.BackendGeminiAPI,
			HTTPClient:  m.opts.Limits.HTTPClient(m.opts.HTTPClient),
			HTTPOptions: genai.HTTPOptions{BaseURL: m.opts.BaseURL, RetryOptions: &genai.HTTPRetryOptions{Attempts: &attempts}}}
		if m.opts.Vertex {
			cfg.Backend, cfg.APIKey, cfg.Project, cfg.Location = genai.BackendVertexAI, "", m.opts.Project, m.opts.Location
		}
		m.client, m.initErr = genai.NewClient(context.WithoutCancel(ctx), cfg)
	})
	return m.client, m.initErr
}

// Generate implements model.Model.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	client, err := m.clientFor(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", Provider, m.name, err)
	}
	contents, err := m.contents(req)
	if err != nil {
		return nil, err
	}
	cfg, err := m.config(req)
	if err != nil {
		return nil, err
	}
	var parts []*genai.Part
	var usage *genai.GenerateContentResponseUsageMetadata
	if !m.opts.Stream {
		resp, err := client.Models.GenerateContent(ctx, m.name, contents, cfg)
		if err != nil {
			return nil, m.providerError(err)
		}
		if len(resp.Candidates) == 0 || resp.Candidates[0].Content == nil {
			return nil, m.providerError(fmt.Errorf("the response has no candidate (%s)", blockReason(resp)))
		}
		parts, usage = resp.Candidates[0].Content.Parts, resp.UsageMetadata
	} else {
		for resp, err := range client.Models.GenerateContentStream(ctx, m.name, contents, cfg) {
			if err != nil {
				return nil, m.providerError(err)
			}
			if resp.UsageMetadata != nil {
				usage = resp.UsageMetadata
			}
			if len(resp.Candidates) == 0 || resp.Candidates[0].Content == nil {
				continue
			}
			for _, p := range resp.Candidates[0].Content.Parts {
				if p.Text != "" && !p.Thought && req.OnTextDelta != nil {
					req.OnTextDelta(p.Text)
				}
				parts = append(parts, p)
			}
		}
	}
	return m.response(parts, usage)
}

func blockReason(resp *genai.GenerateContentResponse) string {
	if resp.PromptFeedback != nil && resp.PromptFeedback.BlockReason != "" {
		return "blocked: " + string(resp.PromptFeedback.BlockReason)
	}
	return "no content"
}

// response is one assistant message: the text of the parts that are not
// thoughts, the function calls in order, and, when a part carries a thought
// signature (or is a thought), every part kept as sent.
func (m *Model) response(parts []*genai.Part, usage *genai.GenerateContentResponseUsageMetadata) (*model.Response, error) {
	out := model.Message{Role: model.RoleAssistant}
	keep := false
	for _, p := range parts {
		keep = keep || p.Thought || len(p.ThoughtSignature) > 0
		switch {
		case p.FunctionCall != nil:
			args, err := json.Marshal(p.FunctionCall.Args)
			if err != nil || p.FunctionCall.Args == nil {
				args = []byte("{}")
			}
			out.ToolCalls = append(out.ToolCalls, model.ToolCall{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Arguments: string(args)})
		case p.Text != "" && !p.Thought:
			out.Content += p.Text
		}
	}
	if keep {
		data, err := json.Marshal(parts)
		if err != nil {
			return nil, fmt.Errorf("%s %s: the reply's parts do not encode: %w", Provider, m.name, err)
		}
		out.Provider = &model.ProviderData{Name: Provider, Data: data}
	}
	resp := &model.Response{Message: out}
	if usage != nil {
		resp.Usage = model.Usage{InputTokens: int64(usage.PromptTokenCount), OutputTokens: int64(usage.CandidatesTokenCount + usage.ThoughtsTokenCount)}
	}
	return resp, nil
}

// contents is the conversation as Gemini takes it: the model's turns with
// their kept parts, when they have them, as sent; tool results as function
// responses named after their calls, in one user turn.
func (m *Model) contents(req *model.Request) ([]*genai.Content, error) {
	var out []*genai.Content
	calls := map[string]model.ToolCall{} // call id → the call, for its name
	origID := map[string]string{}        // call id → the id Gemini gave it ("" for none)
	add := func(role string, p *genai.Part) {
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Parts = append(out[n-1].Parts, p)
			return
		}
		out = append(out, &genai.Content{Role: role, Parts: []*genai.Part{p}})
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case model.RoleUser:
			add(genai.RoleUser, genai.NewPartFromText(msg.Content))
		case model.RoleTool:
			tc := calls[msg.ToolCallID]
			key := "output"
			if msg.IsError {
				key = "error"
			}
			add(genai.RoleUser, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: origID[msg.ToolCallID], Name: tc.Name,
				Response: map[string]any{key: msg.Content}}})
		case model.RoleAssistant:
			for _, tc := range msg.ToolCalls {
				calls[tc.ID], origID[tc.ID] = tc, tc.ID
			}
			if data := model.ProviderDataOf(msg, Provider); data != nil {
				var parts []*genai.Part
				if err := json.Unmarshal(data, &parts); err != nil {
					return nil, fmt.Errorf("%s: message %d: its kept parts do not decode: %w", Provider, i, err)
				}
				n := 0
				for _, p := range parts {
					if p.FunctionCall != nil && n < len(msg.ToolCalls) {
						origID[msg.ToolCalls[n].ID] = p.FunctionCall.ID
						n++
					}
					add(genai.RoleModel, p)
				}
				continue
			}
			if msg.Content != "" {
				add(genai.RoleModel, genai.NewPartFromText(msg.Content))
			}
			for _, tc := range msg.ToolCalls {
				var args map[string]any
				if json.Unmarshal([]byte(tc.Arguments), &args) != nil {
					args = map[string]any{} // the engine already told the model its JSON was bad
				}
				add(genai.RoleModel, &genai.Part{FunctionCall: &genai.FunctionCall{ID: tc.ID, Name: tc.Name, Args: args}})
			}
			if len(msg.Content) == 0 && len(msg.ToolCalls) == 0 {
				add(genai.RoleModel, genai.NewPartFromText("(no answer)"))
			}
		default:
			return nil, fmt.Errorf("%s: message role %q is not supported", Provider, msg.Role)
		}
	}
	return out, nil
}

func (m *Model) config(req *model.Request) (*genai.GenerateContentConfig, error) {
	cfg := &genai.GenerateContentConfig{}
	if req.System != "" {
		cfg.SystemInstruction = genai.NewContentFromText(req.System, genai.RoleUser)
	}
	if req.OutputSchema != nil {
		var schema any
		if err := json.Unmarshal(req.OutputSchema, &schema); err != nil {
			return nil, fmt.Errorf("%s: output schema: %w", Provider, err)
		}
		cfg.ResponseMIMEType, cfg.ResponseJsonSchema = "application/json", schema
	}
	if m.opts.MaxOutputTokens > 0 {
		cfg.MaxOutputTokens = m.opts.MaxOutputTokens
	}
	if t := m.opts.Thinking; t != nil {
		budget := t.BudgetTokens
		cfg.ThinkingConfig = &genai.ThinkingConfig{ThinkingBudget: &budget}
	}
	if len(req.Tools) > 0 {
		tool := &genai.Tool{}
		for _, t := range req.Tools {
			var schema any
			if len(t.Parameters) > 0 {
				if err := json.Unmarshal(t.Parameters, &schema); err != nil {
					return nil, fmt.Errorf("%s: tool %q: parameters: %w", Provider, t.Name, err)
				}
			}
			tool.FunctionDeclarations = append(tool.FunctionDeclarations, &genai.FunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJsonSchema: schema})
		}
		cfg.Tools = []*genai.Tool{tool}
	}
	return cfg, nil
}

// providerError describes a failed call: provider, model, status.
func (m *Model) providerError(err error) error {
	var status int
	var message string
	var apiErr genai.APIError // the SDK returns it as a value
	if errors.As(err, &apiErr) {
		status, message = apiErr.Code, apiErr.Message
	}
	return model.NewProviderError(Provider, m.name, err, status, "", message, m.retries)
}
