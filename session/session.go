package session

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/model"
	segjson "github.com/segmentio/encoding/json"
)

// Session is one conversation thread as clients see it: what it is doing,
// what it said last, and what it waits for.
type Session struct {
	ID string `json:"id"`
	// Nonce is drawn at random when the session is created, and is part of
	// every id and token derived from the session (interrupt and wait ids,
	// idempotency keys, action links, callback URLs): nothing issued for a
	// purged session acts on a later one given the same id. Empty for
	// sessions created before it existed.
	Nonce  string `json:"nonce,omitempty"`
	Agent  string `json:"agent"`
	Status Status `json:"status"`
	// Seq is the seq of the session's last event. Decisions must name it.
	Seq int64 `json:"seq"`
	// Output is the final answer's text. For an agent with an output
	// schema, OutputJSON is the answer as a JSON value, and the JSON form
	// of the session has it as "output", with the text as "output_text".
	Output     string          `json:"output"`
	OutputJSON json.RawMessage `json:"-"`
	Error      *Failure        `json:"error"`
	// Request is the start of the user's last message to the agent that
	// holds the conversation (the top of the stack), at most RequestBytes
	// and then an ellipsis: what the session is working on, which an
	// approver reads beside each pending call. The events have it whole.
	Request string `json:"request,omitempty"`
	// Interrupts is non-empty exactly when Status is paused.
	Interrupts []Interrupt  `json:"interrupts"`
	Stack      []StackFrame `json:"stack"`
	// Remembered lists the tools approved for the rest of the session.
	Remembered []Remembered   `json:"remembered"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	// Owner is who started the session (the auth token's name), if known.
	Owner string `json:"owner,omitempty"`
	// Tenant is the tenant the session belongs to: its starter's
	// (Actor.Tenant). "" is the default tenant, every session's where no
	// tenants are configured. Only actors in the tenant (Actor.InTenant)
	// see or decide anything of it.
	Tenant string `json:"tenant,omitempty"`
	// LeaseOwner names the process that runs the turn of a running session,
	// and LeaseExpiresAt when another process may take it over unless the
	// owner renews. A released or expired lease means it is being taken over.
	LeaseOwner     string      `json:"lease_owner,omitempty"`
	LeaseExpiresAt *time.Time  `json:"lease_expires_at,omitempty"`
	Usage          model.Usage `json:"usage"`
	CreatedAt      time.Time   `json:"created_at"`
	UpdatedAt      time.Time   `json:"updated_at"`
	// ForkedFrom, on a fork (Runner.Fork, POST /v1/sessions/{id}/fork), is
	// the session and seq its log was copied from.
	ForkedFrom *ForkOrigin `json:"forked_from,omitempty"`
	// Definition is the version of its agent the session runs under: the
	// content hash of the agent's definition (instructions, tools with
	// their schemas and approval policies, the agents it reaches) and
	// whether it is the one deployed now. Nil for sessions started before
	// versions were recorded.
	Definition *DefinitionVersion `json:"definition,omitempty"`
	// Truncated, in a listing, names the fields shown as a preview ("output",
	// "error.message"): the session itself (GET /v1/sessions/{id}) has them
	// whole. Empty everywhere else.
	Truncated []string `json:"truncated,omitempty"`
}

// DefinitionVersion is the version of its agent a session runs under.
type DefinitionVersion struct {
	// Hash is the content hash of the definition ("sha256:…").
	Hash string `json:"hash"`
	// Current reports whether it is the definition deployed now (as the
	// runner that answers has it). A paused session whose definition is
	// not current resumes under its own, or, when its agent says
	// on_new_version: latest, under the current one, recording a
	// definition_changed event.
	Current bool `json:"current"`
}

// RequestBytes bounds Session.Request, so that a session's summary, which
// every listing and stream reads, stays small however long the user wrote.
const RequestBytes = 1 << 10

// Mode is how an agent's frame relates to the one that started it.
type Mode string

// Frame modes.
const (
	// ModeMain is the session's root agent.
	ModeMain Mode = "main"
	// ModeTool is an agent used as a tool: it runs to completion and its
	// final text is the tool's result; its pauses bubble up with their path.
	ModeTool Mode = "tool"
	// ModeInteractive is an agent that takes over the conversation until it
	// calls the tool "complete"; its result is the tool's result.
	ModeInteractive Mode = "interactive"
)

// CancelScope is how much of a session a cancel ends.
type CancelScope string

// Cancel scopes.
const (
	// CancelTop pops the top interactive agent; its parent's turn goes on.
	CancelTop CancelScope = "top"
	// CancelAll unwinds the whole stack and ends the turn as cancelled.
	CancelAll CancelScope = "all"
)

// StackFrame is one frame of the chain from the root agent to the agent that
// receives the user's messages.
type StackFrame struct {
	Agent string `json:"agent"`
	// Mode is ModeMain for the root agent, ModeInteractive for a sub-agent
	// that took over the conversation.
	Mode Mode `json:"mode"`
}

// MarshalJSON writes the session; with OutputJSON, "output" is that value
// and "output_text" the text. A runner encodes the summary at nearly every
// commit, so it uses github.com/segmentio/encoding/json: the bytes
// encoding/json would write (FuzzSessionJSON checks), in about half the time.
func (s Session) MarshalJSON() ([]byte, error) {
	if b, ok := s.marshalSimple(false); ok {
		return b, nil
	}
	return segjson.Marshal(s.shape())
}

// MarshalStored writes the session as a store keeps its summary: as
// MarshalJSON does, but its interrupts without their Ask, which readers
// derive when they write the session out.
func (s Session) MarshalStored() ([]byte, error) {
	if b, ok := s.marshalSimple(true); ok {
		return b, nil
	}
	return segjson.Marshal(s.storedShape())
}

// sessionFields is Session without its methods: what the reflective
// encoders write field by field.
type sessionFields Session

// shape is what MarshalJSON writes when it does not write it by hand, as
// a value any JSON encoder writes the same (the tests hold appendSimple to
// encoding/json's writing of it): the output as JSON and as text when
// the output is JSON.
func (s Session) shape() any {
	if s.OutputJSON == nil {
		return sessionFields(s)
	}
	return struct {
		sessionFields
		Output     json.RawMessage `json:"output"`
		OutputText string          `json:"output_text"`
	}{sessionFields(s), s.OutputJSON, s.Output}
}

// storedShape is shape with the interrupts as a store keeps them.
func (s Session) storedShape() any {
	ins := recordedAll(s.Interrupts)
	if s.OutputJSON == nil {
		return struct {
			sessionFields
			Interrupts []recorded `json:"interrupts"`
		}{sessionFields(s), ins}
	}
	return struct {
		sessionFields
		Interrupts []recorded      `json:"interrupts"`
		Output     json.RawMessage `json:"output"`
		OutputText string          `json:"output_text"`
	}{sessionFields(s), ins, s.OutputJSON, s.Output}
}

// UnmarshalJSON reads a session written by MarshalJSON or MarshalStored.
func (s *Session) UnmarshalJSON(b []byte) error {
	type plain Session
	var out struct {
		plain
		Output     json.RawMessage `json:"output"`
		OutputText *string         `json:"output_text"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return err
	}
	*s = Session(out.plain)
	switch {
	case out.OutputText != nil:
		s.Output, s.OutputJSON = *out.OutputText, out.Output
	case len(out.Output) > 0 && string(out.Output) != "null":
		if err := json.Unmarshal(out.Output, &s.Output); err != nil {
			return fmt.Errorf("session output: %w", err)
		}
	}
	return nil
}
