// Package scripted is a deterministic Model for tests, examples and the
// demo: it replies from a script instead of calling a language model.
package scripted

import (
	"context"
	"fmt"
	"strings"
	"text/template"
	"unicode"

	"github.com/cairnhq/cairn/model"
)

// Reply is one scripted assistant message.
type Reply struct {
	// Text is a text/template over Vars.
	Text      string
	ToolCalls []Call
}

// Call is a scripted tool call.
type Call struct {
	// ID defaults to a deterministic id unique in the conversation.
	ID   string
	Name string
	// Arguments is the argument JSON, sent to the engine as is, or, when
	// it holds "{{", a text/template over Vars giving it ({"env":
	// "{{.Input}}"}: the user's last message as a string's content).
	Arguments string
}

// Vars are what a Reply's Text template can use.
type Vars struct {
	// Input is the last user message.
	Input string
	// LastResult is the content of the last tool result, if any.
	LastResult string
	// LastResultIsError reports whether the last tool result was an error.
	LastResultIsError bool
}

// Model plays a script. The reply depends only on the conversation, so one
// Model serves many sessions, and a session resumed in another process
// continues the script where it paused. Past the end of a script it says so.
//
// An agent with a script in Scripts plays it through the whole
// conversation: its i-th reply is Scripts[agent][i], counting the assistant
// messages that agent wrote (not those of an agent that handed the
// conversation over). A reply with text and no tool calls ends the turn, so
// the next reply answers the user's next message: that is how an
// interactive sub-agent or a handoff target holds a conversation. Any other
// agent replies with Replies[i], where i counts the assistant messages
// since the last user message: the same replies every turn.
type Model struct {
	Replies []Reply
	// Scripts are per-agent scripts that continue across the user's messages.
	Scripts map[string][]Reply
	// Stream sends each reply's text to Request.OnTextDelta word by word,
	// as a streaming provider would; without it, like a non-streaming
	// provider, no deltas are sent.
	Stream bool
	// Bounds are the model's limits (the runner applies Timeout and
	// MaxReplyBytes; a script has no silences to time).
	Bounds model.Limits
}

// New returns a model that plays replies.
func New(replies ...Reply) *Model { return &Model{Replies: replies} }

// Limits implements model.Limited.
func (m *Model) Limits() model.Limits { return m.Bounds }

// Generate implements model.Model.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var vars Vars
	step, own, assistants := 0, 0, 0
	for _, msg := range req.Messages {
		switch msg.Role {
		case model.RoleUser:
			vars.Input, step = msg.Content, 0
		case model.RoleAssistant:
			step++
			assistants++
			if msg.Agent == req.Agent {
				own++
			}
		case model.RoleTool:
			vars.LastResult, vars.LastResultIsError = msg.Content, msg.IsError
		}
	}
	replies, ok := m.Scripts[req.Agent]
	if ok {
		step = own
	} else {
		replies = m.Replies
	}
	if step >= len(replies) {
		where := "this turn is past them"
		if ok {
			where = fmt.Sprintf("agent %s has used them all", req.Agent)
		}
		return &model.Response{Message: model.Message{Role: model.RoleAssistant,
			Content: fmt.Sprintf("(scripted model: the script has %d replies and %s)", len(replies), where)}}, nil
	}
	r := replies[step]
	text, err := expand(r.Text, vars)
	if err != nil {
		return nil, fmt.Errorf("scripted reply %d: %w", step, err)
	}
	msg := model.Message{Role: model.RoleAssistant, Content: text}
	for i, c := range r.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", assistants+1, i+1)
		}
		args, err := expand(c.Arguments, vars)
		if err != nil {
			return nil, fmt.Errorf("scripted reply %d, call %d: %w", step, i, err)
		}
		msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: id, Name: c.Name, Arguments: args})
	}
	if m.Stream && req.OnTextDelta != nil && text != "" {
		for _, w := range strings.SplitAfter(text, " ") {
			req.OnTextDelta(w)
		}
	}
	return &model.Response{Message: msg, Usage: model.Usage{InputTokens: int64(len(req.Messages)), OutputTokens: int64(words(text))}}, nil
}

// words counts what strings.Fields would return, without the slice.
func words(s string) int {
	n, in := 0, false
	for _, r := range s {
		space := unicode.IsSpace(r)
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

// Describe names the provider and model, for telemetry.
func (m *Model) Describe() (provider, name string) { return "scripted", "scripted" }

// expand runs text as a template over vars when it holds one.
func expand(text string, vars Vars) (string, error) {
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	t, err := template.New("reply").Parse(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := t.Execute(&b, vars); err != nil {
		return "", err
	}
	return b.String(), nil
}
