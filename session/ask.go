package session

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
)

// This file is the one description of each interrupt kind: how a person is
// asked about it and what they may answer. Every door (REST, the web page,
// cairn chat, the CLI, MCP, webhooks, the clients) renders an interrupt
// from its Ask and turns a person's choice back into a Decision with
// Interrupt.Choose, so a new kind is described here once. The doors switch
// on a kind only where their protocol really differs (the AI SDK and AG-UI
// adapters map kinds to tool parts), under the exhaustive check.

// Decider is who may decide an interrupt.
type Decider string

// Who decides.
const (
	// DeciderApprover: an approver (or an admin) decides it.
	DeciderApprover Decider = "approver"
	// DeciderOwner: the session's own user may decide it (answer a
	// question, send a client tool's result, reply to an agent), and so
	// may an approver.
	DeciderOwner Decider = "owner"
)

// Field is the part of a Decision a choice takes from the person; its
// value is the Decision's JSON key of that part, so a front end sets
// decision[field] = value without knowing the kind.
type Field string

// Fields of a decision a person fills in.
const (
	// FieldReason is Decision.Reason: text the model sees.
	FieldReason Field = "reason"
	// FieldText is Decision.Text: a free-text answer.
	FieldText Field = "text"
	// FieldContent is Decision.Content: a JSON object valid under
	// Choice.Schema (a question's own form).
	FieldContent Field = "content"
	// FieldArguments is Decision.Arguments: replacement arguments, valid
	// under the tool's parameters.
	FieldArguments Field = "arguments"
	// FieldOutput is Decision.Output: a JSON value valid under
	// Choice.Schema (an edited answer, a call's result).
	FieldOutput Field = "output"
)

// JSON reports whether the field holds a JSON value rather than text.
func (f Field) JSON() bool { return f == FieldContent || f == FieldArguments || f == FieldOutput }

// KindSpec describes one kind of interrupt, the same for every door.
type KindSpec struct {
	Kind Kind
	// Label names the kind in a heading: "approval", "question", ….
	Label string
	// ForPerson is false for a wait on a system or on the caller's code
	// (it is not put to a person, though a person may stand in).
	ForPerson bool
	// Reply: the interrupt is answered by the user's next message
	// (Runner.Send, POST …/messages), not by a decision.
	Reply bool
	// Decider is who may decide it. The decisions it takes are its
	// Ask's choices (Interrupt.Actions).
	Decider Decider
}

// AllKinds lists the interrupt kinds of this version, in a fixed order
// that only ever grows at the end (stores number kinds by it).
func AllKinds() []Kind {
	return []Kind{KindApproval, KindInput, KindMessage, KindReview, KindExternal, KindClient}
}

// Spec describes kind k; an unknown kind (from a newer server) gets a spec
// that offers nothing and names it as it is.
func (k Kind) Spec() KindSpec {
	switch k {
	case KindApproval:
		return KindSpec{Kind: k, Label: "approval", ForPerson: true, Decider: DeciderApprover}
	case KindInput:
		return KindSpec{Kind: k, Label: "question", ForPerson: true, Decider: DeciderOwner}
	case KindMessage:
		return KindSpec{Kind: k, Label: "waits for you", ForPerson: true, Reply: true, Decider: DeciderOwner}
	case KindReview:
		return KindSpec{Kind: k, Label: "review the answer", ForPerson: true, Decider: DeciderApprover}
	case KindExternal:
		return KindSpec{Kind: k, Label: "waits on a system", Decider: DeciderApprover}
	case KindClient:
		return KindSpec{Kind: k, Label: "run this tool", Decider: DeciderOwner}
	}
	return KindSpec{Kind: k, Label: string(k), ForPerson: true, Decider: DeciderApprover}
}

// Ask is how a person is asked about one interrupt: a heading, what to
// read, and the choices they have. The JSON of an Interrupt carries it
// ("ask"), so a front end in any language renders any kind from it.
type Ask struct {
	// Label names the kind ("approval", "question", …).
	Label string `json:"label"`
	// Subject is the tool the interrupt is about; empty when an agent
	// speaks or answers (the door names the agent from the session's
	// stack).
	Subject string `json:"subject,omitempty"`
	// Text is what the person reads: the confirmation, the question, the
	// agent's words, what the wait is about. The interrupt's arguments
	// and output, when it has them, are shown beside it.
	Text string `json:"text"`
	// Link is a page the person opens to do what is asked.
	Link string `json:"link,omitempty"`
	// Decider is who may decide.
	Decider Decider `json:"decider"`
	// Reply: answered by the next message, not by a choice.
	Reply bool `json:"reply,omitempty"`
	// Warning is what to check first (a call that may have run already).
	Warning string `json:"warning,omitempty"`
	// Choices are the decisions offered, the usual one first.
	Choices []Choice `json:"choices,omitempty"`
}

// Choice is one decision a person may make on an interrupt.
type Choice struct {
	Action Action `json:"action"`
	// Label is the button's text.
	Label string `json:"label"`
	// Field is what the choice takes from the person, if anything.
	Field Field `json:"field,omitempty"`
	// Optional: the field may be left out (approve as asked, reject with
	// no reason).
	Optional bool `json:"optional,omitempty"`
	// Schema is the JSON Schema the field's value must match, when the
	// interrupt carries it (a question's form, an output schema, a result
	// schema); for arguments it is the tool's parameters.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Default is the value to start editing from.
	Default json.RawMessage `json:"default,omitempty"`
}

// Ask describes how a person is asked about the interrupt.
func (in Interrupt) Ask() Ask {
	spec := in.Kind.Spec()
	a := Ask{Label: spec.Label, Subject: in.Tool, Decider: spec.Decider, Reply: spec.Reply}
	reason := Choice{Action: ActionReject, Label: "Reject", Field: FieldReason, Optional: true}
	switch in.Kind {
	case KindApproval:
		a.Text = in.Message
		if a.Text == "" {
			a.Text = fmt.Sprintf("Run tool %s with %s?", in.Tool, orEmpty(in.Arguments))
		}
		a.Choices = []Choice{{Action: ActionApprove, Label: "Approve", Field: FieldArguments, Optional: true, Default: in.Arguments}, reason}
	case KindInput:
		a.Text, a.Link = in.Question, in.URL
		answer := Choice{Action: ActionAnswer, Label: "Answer", Field: FieldText}
		switch {
		case in.URL != "":
			answer = Choice{Action: ActionAnswer, Label: "Done"}
		case len(in.Schema) > 0:
			answer.Field, answer.Schema = FieldContent, in.Schema
		}
		a.Choices = []Choice{answer, reason}
	case KindMessage:
		a.Text = in.Text
	case KindReview:
		// A review policy that failed says so in the message.
		a.Text = cmp.Or(in.Message, "The answer waits for your review.")
		reason.Label = "Send back"
		a.Choices = []Choice{{Action: ActionApprove, Label: "Approve"},
			{Action: ActionEdit, Label: "Edit answer", Field: FieldOutput, Schema: in.OutputSchema, Default: in.Output}, reason}
	case KindExternal:
		a.Text = in.Message
		if a.Text == "" {
			a.Text = "Started; its result arrives by its callback URL."
		}
		if in.Handle != "" {
			a.Text += " (" + in.Handle + ")"
		}
		a.Choices = settle(in)
	case KindClient:
		a.Text = fmt.Sprintf("Run tool %s with %s yourself, then complete the call with its result (or fail it).", in.Tool, orEmpty(in.Arguments))
		a.Choices = settle(in)
	default:
		a.Text = fmt.Sprintf("An interrupt of kind %q, which this version does not know.", in.Kind)
	}
	if in.InDoubt {
		a.Warning = "This call was running when Cairn stopped: it may already have taken effect. Check before approving it again"
		if in.IdempotencyKey != "" {
			a.Warning += " (idempotency key " + in.IdempotencyKey + ")"
		}
		a.Warning += "."
		a.Choices = append(a.Choices, settle(in)...)
	}
	return a
}

// orEmpty is a JSON value as text, {} when there is none.
func orEmpty(v json.RawMessage) string {
	if len(v) == 0 {
		return "{}"
	}
	return string(v)
}

// settle is the choices of a call whose result is awaited.
func settle(in Interrupt) []Choice {
	return []Choice{{Action: ActionComplete, Label: "Complete", Field: FieldOutput, Schema: in.ResultSchema},
		{Action: ActionFail, Label: "Fail", Field: FieldReason, Optional: true}}
}

// First is the usual choice, the first; the zero Choice when there is none
// (a reply).
func (a Ask) First() Choice {
	if len(a.Choices) == 0 {
		return Choice{}
	}
	return a.Choices[0]
}

// Choice returns the interrupt's choice of action a, if it offers one.
func (a Ask) Choice(action Action) (Choice, bool) {
	for _, c := range a.Choices {
		if c.Action == action {
			return c, true
		}
	}
	return Choice{}, false
}

// Choose turns a person's choice into a decision on the interrupt: action
// is one of Ask().Choices, and value what they gave for its field (JSON
// for a JSON field, text otherwise; empty for none). A choice the
// interrupt does not offer, or a value it cannot take, is an error that
// names the choices.
func (in Interrupt) Choose(action Action, value string) (Decision, error) {
	ask := in.Ask()
	c, ok := ask.Choice(action)
	if !ok {
		return Decision{}, fmt.Errorf("%s %s takes %s, not %q", in.Kind, in.ID, ask.choiceNames(), action)
	}
	d := Decision{InterruptID: in.ID, Action: action}
	value = strings.TrimSpace(value)
	switch {
	case c.Field == "" && value != "":
		return Decision{}, fmt.Errorf("%s takes nothing more; drop %q", action, value)
	case c.Field == "":
	case value == "" && !c.Optional:
		return Decision{}, fmt.Errorf("%s needs its %s", action, c.Field)
	case value == "":
	case c.Field.JSON() && !json.Valid([]byte(value)):
		if c.Field != FieldOutput || strings.ContainsAny(value[:1], "{[\"") {
			return Decision{}, fmt.Errorf("%s: the %s must be JSON, got %q", action, c.Field, value)
		}
		// An output may be plain text (the text the model reads), unless
		// it starts as JSON does.
		b, _ := json.Marshal(value)
		d.Output = b
	default:
		d.set(c.Field, value)
	}
	return d, nil
}

// set puts value into the field f of d.
func (d *Decision) set(f Field, value string) {
	switch f {
	case FieldReason:
		d.Reason = value
	case FieldText:
		d.Text = value
	case FieldContent:
		d.Content = json.RawMessage(value)
	case FieldArguments:
		d.Arguments = json.RawMessage(value)
	case FieldOutput:
		d.Output = json.RawMessage(value)
	}
}

// choiceNames lists the actions offered, for messages.
func (a Ask) choiceNames() string {
	if a.Reply {
		return "a reply (the next message)"
	}
	names := make([]string, len(a.Choices))
	for i, c := range a.Choices {
		names[i] = string(c.Action)
	}
	if len(names) == 0 {
		return "no decision"
	}
	return strings.Join(names, ", ")
}
