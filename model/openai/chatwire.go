package openai

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/cairnhq/cairn/model"
)

// The Chat Completions API's lean path (see wire.go): non-streaming calls.
// A streamed call keeps the SDK's ChatCompletionAccumulator, whose rules
// (chunk ids that must agree, bounded choice and tool-call indexes) are
// the reference for what a stream means.

// chatRequest is the body of POST /chat/completions.
type chatRequest struct {
	Model          string      `json:"model"`
	Messages       []any       `json:"messages,omitempty"`
	Tools          []chatTool  `json:"tools,omitempty"`
	ResponseFormat *chatFormat `json:"response_format,omitempty"`
}

type chatFormat struct {
	Type       string         `json:"type"`
	JSONSchema chatJSONSchema `json:"json_schema"`
}

type chatJSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict bool            `json:"strict"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type chatText struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatToolResult struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
}

type chatAssistant struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content,omitempty"`
	ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
}

type chatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function chatCallFunction `json:"function"`
}

type chatCallFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func (m *Model) generateLean(ctx context.Context, req *model.Request) (*model.Response, error) {
	body, err := m.body(req)
	if err != nil {
		return nil, err
	}
	raw, err := m.chat.post(ctx, body)
	if err != nil {
		return nil, m.providerError(err)
	}
	return m.decode(raw)
}

// body is the request the lean path sends: what params builds, as JSON.
func (m *Model) body(req *model.Request) ([]byte, error) {
	p := chatRequest{Model: m.name, Messages: make([]any, 0, len(req.Messages)+1)}
	if req.OutputSchema != nil {
		if err := jsonObject(req.OutputSchema); err != nil {
			return nil, fmt.Errorf("openai: output schema: %w", err)
		}
		p.ResponseFormat = &chatFormat{Type: "json_schema", JSONSchema: chatJSONSchema{Name: "output", Schema: schemaOrNothing(req.OutputSchema)}}
	}
	if req.System != "" {
		p.Messages = append(p.Messages, chatText{Role: "system", Content: req.System})
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case model.RoleUser:
			p.Messages = append(p.Messages, chatText{Role: "user", Content: msg.Content})
		case model.RoleTool:
			p.Messages = append(p.Messages, chatToolResult{Role: "tool", Content: msg.Content, ToolCallID: msg.ToolCallID})
		case model.RoleAssistant:
			a := chatAssistant{Role: "assistant"}
			if msg.Content != "" {
				a.Content = &msg.Content
			}
			for _, tc := range msg.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, chatToolCall{ID: tc.ID, Type: "function", Function: chatCallFunction{Name: tc.Name, Arguments: tc.Arguments}})
			}
			p.Messages = append(p.Messages, a)
		default:
			return nil, fmt.Errorf("openai: message role %q is not supported", msg.Role)
		}
	}
	for _, t := range req.Tools {
		if err := jsonObject(t.Parameters); err != nil {
			return nil, fmt.Errorf("openai: tool %q: parameters: %w", t.Name, err)
		}
		p.Tools = append(p.Tools, chatTool{Type: "function", Function: chatFunction{Name: t.Name, Description: t.Description, Parameters: schemaOrNothing(t.Parameters)}})
	}
	return json.Marshal(p)
}

// decode reads a ChatCompletion as the SDK's types would (the lean path):
// the first choice's message and the usage.
func (m *Model) decode(raw []byte) (*model.Response, error) {
	r, err := parse(raw)
	if err != nil {
		return nil, m.providerError(fmt.Errorf("error parsing response json: %w", err))
	}
	var first gjson.Result
	found := false
	each(r.Get("choices"), func(c gjson.Result) bool {
		first, found = c, true
		return false
	})
	if !found {
		return nil, fmt.Errorf("openai %s: response %s has no choices", m.name, r.Get("id").String())
	}
	msg := first.Get("message")
	out := model.Message{Role: model.RoleAssistant, Content: text(msg.Get("content"))}
	each(msg.Get("tool_calls"), func(tc gjson.Result) bool {
		if t := tc.Get("type").String(); t != "" && t != "function" {
			return true
		}
		fn := tc.Get("function")
		out.ToolCalls = append(out.ToolCalls, model.ToolCall{ID: text(tc.Get("id")), Name: text(fn.Get("name")), Arguments: text(fn.Get("arguments"))})
		return true
	})
	usage := r.Get("usage")
	return &model.Response{Message: out, Usage: model.Usage{InputTokens: usage.Get("prompt_tokens").Int(), OutputTokens: usage.Get("completion_tokens").Int()}}, nil
}
