package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"

	"github.com/cairnhq/cairn/model"
)

// ResponsesProvider names the Responses adapter's data in
// model.ProviderData, and the provider in errors and telemetry.
const ResponsesProvider = "openai-responses"

// ResponsesOptions are the optional settings of a Responses model; nil
// means the defaults.
type ResponsesOptions struct {
	Options
	// ReasoningEffort is a reasoning model's effort: "minimal", "low",
	// "medium", "high"; empty means the model's default.
	ReasoningEffort string
	// Store lets OpenAI keep the responses (the API's default). False
	// keeps nothing there: the reasoning comes back encrypted
	// (encrypted_content), Cairn keeps it with the reply, and sends it back
	// with the tool results of the same turn, whenever they come. Nil means
	// false: Cairn never relies on state kept by the provider.
	Store *bool
	// MaxOutputTokens bounds each response, reasoning included; 0 means
	// the model's limit.
	MaxOutputTokens int64
}

// Responses is a model.Model backed by the OpenAI Responses API, the one
// OpenAI's reasoning models are served best through. Each reply's
// reasoning items are kept with it (model.Message.Provider) and sent back
// with the calls they led to, so that a turn paused for an approval goes on
// with its reasoning after an hour, a restart or on another server;
// previous_response_id is never used.
type Responses struct {
	client  sdk.Client
	lean    *sender // the lean path's
	name    string
	opts    ResponsesOptions
	retries int
}

var (
	_ model.Model   = (*Responses)(nil)
	_ model.Limited = (*Responses)(nil)
)

// NewResponses returns a Responses model calling the model named name, e.g.
// "o4-mini" or "gpt-5". opts may be nil.
func NewResponses(name string, opts *ResponsesOptions) *Responses {
	if opts == nil {
		opts = &ResponsesOptions{}
	}
	chat := New(name, &opts.Options)
	m := &Responses{client: chat.client, name: name, opts: *opts, retries: chat.retries}
	m.lean = newSender(&m.client, chat.http, "responses")
	return m
}

// Limits returns the limits of each call (Options.Limits).
func (m *Responses) Limits() model.Limits { return m.opts.Limits }

// Describe names the provider and model, for telemetry.
func (m *Responses) Describe() (provider, name string) { return ResponsesProvider, m.name }

// Generate implements model.Model.
func (m *Responses) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if m.opts.SDK {
		return m.generateSDK(ctx, req)
	}
	body, err := m.body(req)
	if err != nil {
		return nil, err
	}
	if !m.opts.Stream {
		raw, err := m.lean.post(ctx, body)
		if err != nil {
			return nil, m.providerError(err)
		}
		return m.decode(raw)
	}
	var resp *http.Response
	err = m.client.Post(ctx, "responses", body, &resp)
	s := ssestream.NewStream[responsesEvent](ssestream.NewDecoder(resp), err)
	defer s.Close()
	var done []byte
	for s.Next() {
		ev := gjson.ParseBytes(s.Current().raw)
		switch ev.Get("type").String() {
		case "response.output_text.delta":
			if delta := ev.Get("delta").String(); req.OnTextDelta != nil && delta != "" {
				req.OnTextDelta(delta)
			}
		case "response.completed", "response.incomplete":
			done = []byte("{}") // the SDK's zero Response, for an event without one
			if r := ev.Get("response"); r.IsObject() {
				done = []byte(r.Raw)
			}
		case "response.failed", "error":
			return nil, m.providerError(fmt.Errorf("the stream failed: %s", ev.Raw))
		}
	}
	if err := s.Err(); err != nil {
		return nil, m.providerError(err)
	}
	if done == nil {
		return nil, m.providerError(errors.New("the stream ended before the response completed"))
	}
	return m.decode(done)
}

// decode reads a Response as the SDK's types would (the lean path).
func (m *Responses) decode(raw []byte) (*model.Response, error) {
	r, err := parse(raw)
	if err != nil {
		return nil, m.providerError(fmt.Errorf("error parsing response json: %w", err))
	}
	out := model.Message{Role: model.RoleAssistant}
	var reasoning []json.RawMessage
	each(r.Get("output"), func(item gjson.Result) bool {
		if !item.IsObject() {
			return true
		}
		switch item.Get("type").String() {
		case "message":
			each(item.Get("content"), func(c gjson.Result) bool {
				if c.IsObject() && c.Get("type").String() == "output_text" {
					out.Content += text(c.Get("text"))
				}
				return true
			})
		case "function_call":
			out.ToolCalls = append(out.ToolCalls, model.ToolCall{ID: text(item.Get("call_id")), Name: text(item.Get("name")), Arguments: text(item.Get("arguments"))})
		case "reasoning":
			reasoning = append(reasoning, json.RawMessage(item.Raw))
		}
		return true
	})
	usage := r.Get("usage")
	return m.reply(out, reasoning, usage.Get("input_tokens").Int(), usage.Get("output_tokens").Int())
}

// reply completes a decoded reply: its reasoning items kept as sent.
func (m *Responses) reply(out model.Message, reasoning []json.RawMessage, in, outTokens int64) (*model.Response, error) {
	if len(reasoning) > 0 {
		data, err := json.Marshal(reasoning)
		if err != nil {
			return nil, fmt.Errorf("%s %s: a reasoning item is not JSON: %w", ResponsesProvider, m.name, err)
		}
		out.Provider = &model.ProviderData{Name: ResponsesProvider, Data: data}
	}
	return &model.Response{Message: out, Usage: model.Usage{InputTokens: in, OutputTokens: outTokens}}, nil
}

// body is the request the lean path sends: what params builds, as JSON.
func (m *Responses) body(req *model.Request) ([]byte, error) {
	store := m.opts.Store != nil && *m.opts.Store
	p := responsesRequest{Model: m.name, ParallelToolCalls: true, Store: store, Instructions: req.System,
		MaxOutputTokens: max(m.opts.MaxOutputTokens, 0), Stream: m.opts.Stream}
	if !store {
		p.Include = []string{"reasoning.encrypted_content"}
	}
	if m.opts.ReasoningEffort != "" {
		p.Reasoning = &responsesReasoning{Effort: m.opts.ReasoningEffort}
	}
	if req.OutputSchema != nil {
		if err := jsonObject(req.OutputSchema); err != nil {
			return nil, fmt.Errorf("%s: output schema: %w", ResponsesProvider, err)
		}
		p.Text = &responsesText{Format: responsesFormat{Type: "json_schema", Name: "output", Schema: req.OutputSchema}}
	}
	p.Input = make([]any, 0, len(req.Messages)+2)
	for i, msg := range req.Messages {
		switch msg.Role {
		case model.RoleUser:
			p.Input = append(p.Input, easyMessage{Role: "user", Content: msg.Content})
		case model.RoleTool:
			p.Input = append(p.Input, functionCallOutput{Type: "function_call_output", CallID: msg.ToolCallID, Output: msg.Content})
		case model.RoleAssistant:
			if data := model.ProviderDataOf(msg, ResponsesProvider); data != nil {
				var reasoning []json.RawMessage
				if err := json.Unmarshal(data, &reasoning); err != nil {
					return nil, fmt.Errorf("%s: message %d: its kept reasoning does not decode: %w", ResponsesProvider, i, err)
				}
				for _, raw := range reasoning {
					p.Input = append(p.Input, raw) // sent exactly as the API gave it
				}
			}
			if msg.Content != "" {
				p.Input = append(p.Input, easyMessage{Role: "assistant", Content: msg.Content})
			}
			for _, tc := range msg.ToolCalls {
				p.Input = append(p.Input, functionCallInput{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
			}
		default:
			return nil, fmt.Errorf("%s: message role %q is not supported", ResponsesProvider, msg.Role)
		}
	}
	for _, t := range req.Tools {
		if err := jsonObject(t.Parameters); err != nil {
			return nil, fmt.Errorf("%s: tool %q: parameters: %w", ResponsesProvider, t.Name, err)
		}
		p.Tools = append(p.Tools, responsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: schemaOrNothing(t.Parameters)})
	}
	return json.Marshal(p)
}

// generateSDK is the reference path: the SDK's params and types.
func (m *Responses) generateSDK(ctx context.Context, req *model.Request) (*model.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, err
	}
	if !m.opts.Stream {
		resp, err := m.client.Responses.New(ctx, params)
		if err != nil {
			return nil, m.providerError(err)
		}
		if resp == nil { // a reply of null: an empty answer, as on the lean path
			resp = &responses.Response{}
		}
		return m.response(resp)
	}
	s := m.client.Responses.NewStreaming(ctx, params)
	defer s.Close()
	var done *responses.Response
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "response.output_text.delta":
			if req.OnTextDelta != nil && ev.Delta != "" {
				req.OnTextDelta(ev.Delta)
			}
		case "response.completed", "response.incomplete":
			r := ev.Response
			done = &r
		case "response.failed", "error":
			return nil, m.providerError(fmt.Errorf("the stream failed: %s", ev.RawJSON()))
		}
	}
	if err := s.Err(); err != nil {
		return nil, m.providerError(err)
	}
	if done == nil {
		return nil, m.providerError(errors.New("the stream ended before the response completed"))
	}
	return m.response(done)
}

// response turns a Response into one assistant message: its text, its
// function calls in order, and its reasoning items kept as sent.
func (m *Responses) response(r *responses.Response) (*model.Response, error) {
	out := model.Message{Role: model.RoleAssistant}
	var reasoning []json.RawMessage
	for _, item := range r.Output {
		switch item.Type {
		case "message":
			for _, c := range item.AsMessage().Content {
				if c.Type == "output_text" {
					out.Content += c.Text
				}
			}
		case "function_call":
			fc := item.AsFunctionCall()
			out.ToolCalls = append(out.ToolCalls, model.ToolCall{ID: fc.CallID, Name: fc.Name, Arguments: fc.Arguments})
		case "reasoning":
			reasoning = append(reasoning, json.RawMessage(item.RawJSON()))
		}
	}
	return m.reply(out, reasoning, r.Usage.InputTokens, r.Usage.OutputTokens)
}

func (m *Responses) params(req *model.Request) (responses.ResponseNewParams, error) {
	p := responses.ResponseNewParams{Model: shared.ResponsesModel(m.name), ParallelToolCalls: sdk.Bool(true)}
	store := m.opts.Store != nil && *m.opts.Store
	p.Store = sdk.Bool(store)
	if !store {
		// Without stored responses, reasoning comes back only encrypted.
		p.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	}
	if m.opts.ReasoningEffort != "" {
		p.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffort(m.opts.ReasoningEffort)}
	}
	if m.opts.MaxOutputTokens > 0 {
		p.MaxOutputTokens = sdk.Int(m.opts.MaxOutputTokens)
	}
	if req.System != "" {
		p.Instructions = sdk.String(req.System)
	}
	if req.OutputSchema != nil {
		var schema map[string]any
		if err := json.Unmarshal(req.OutputSchema, &schema); err != nil {
			return p, fmt.Errorf("%s: output schema: %w", ResponsesProvider, err)
		}
		p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{
			Name: "output", Schema: schema, Strict: sdk.Bool(false)}}}
	}
	var items responses.ResponseInputParam
	for i, msg := range req.Messages {
		switch msg.Role {
		case model.RoleUser:
			items = append(items, responses.ResponseInputItemParamOfMessage(msg.Content, responses.EasyInputMessageRoleUser))
		case model.RoleTool:
			out := responses.ResponseInputItemParamOfFunctionCallOutput(msg.Content)
			out.OfFunctionCallOutput.CallID = sdk.String(msg.ToolCallID)
			items = append(items, out)
		case model.RoleAssistant:
			if data := model.ProviderDataOf(msg, ResponsesProvider); data != nil {
				var reasoning []json.RawMessage
				if err := json.Unmarshal(data, &reasoning); err != nil {
					return p, fmt.Errorf("%s: message %d: its kept reasoning does not decode: %w", ResponsesProvider, i, err)
				}
				for _, raw := range reasoning {
					var item responses.ResponseReasoningItemParam
					param.SetJSON(raw, &item) // sent exactly as the API gave it
					items = append(items, responses.ResponseInputItemUnionParam{OfReasoning: &item})
				}
			}
			if msg.Content != "" {
				items = append(items, responses.ResponseInputItemParamOfMessage(msg.Content, responses.EasyInputMessageRoleAssistant))
			}
			for _, tc := range msg.ToolCalls {
				items = append(items, responses.ResponseInputItemParamOfFunctionCall(tc.Arguments, tc.ID, tc.Name))
			}
		default:
			return p, fmt.Errorf("%s: message role %q is not supported", ResponsesProvider, msg.Role)
		}
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	for _, t := range req.Tools {
		var schema map[string]any
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return p, fmt.Errorf("%s: tool %q: parameters: %w", ResponsesProvider, t.Name, err)
			}
		}
		// Not strict: the API would otherwise demand every property be
		// required and additionalProperties false, which Cairn's schemas
		// need not say.
		fn := responses.FunctionToolParam{Name: t.Name, Parameters: schema, Strict: sdk.Bool(false)}
		if t.Description != "" {
			fn.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: &fn})
	}
	return p, nil
}

// providerError describes a failed call: provider, model, status, request id.
func (m *Responses) providerError(err error) error {
	var status int
	var requestID, message string
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		status, message = apiErr.StatusCode, apiErr.Message
		if apiErr.Response != nil {
			requestID = apiErr.Response.Header.Get("x-request-id")
		}
	}
	return model.NewProviderError(ResponsesProvider, m.name, err, status, requestID, message, m.retries)
}
