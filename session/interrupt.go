package session

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	segjson "github.com/segmentio/encoding/json"
)

// Kind is what an interrupt waits for. A new kind is added here, and the
// exhaustive check in .ci/run then points at every switch that must learn it.
type Kind string

// Interrupt kinds.
const (
	// KindApproval: a tool call waits for a decision (approve or reject).
	KindApproval Kind = "approval"
	// KindInput: a tool asked the user a question (answer or reject).
	KindInput Kind = "input"
	// KindMessage: an interactive sub-agent spoke and waits for the user's
	// next message (Runner.Send).
	KindMessage Kind = "message"
	// KindReview: an agent's final answer (Interrupt.Output) waits for a
	// person: approve it, edit it (Decision.Output, checked against
	// Interrupt.OutputSchema) or reject it with a reason the model sees.
	KindReview Kind = "review"
	// KindExternal: a tool started work that finishes later, on another
	// system (a CI pipeline, a payment that settles by webhook). The call
	// waits for its result: complete it with the output, or fail it with a
	// reason, by its callback URL, a decision or Runner.Complete. It is not
	// a task for a person; ExpiresAt is its deadline.
	KindExternal Kind = "external"
	// KindClient: a tool the caller runs (a browser reads the user's
	// location). The call waits for the caller to complete it with the
	// result (checked against Interrupt.ResultSchema) or fail it.
	KindClient Kind = "client"
)

// Actions are the decisions a person may make on an interrupt of kind k:
// approve or reject an approval, answer or reject a question. A message
// interrupt takes none: it is answered by the user's next message
// (Runner.Send), so front ends offer a reply instead. See Kind.Spec.
func (k Kind) Actions() []Action { return Interrupt{Kind: k}.Actions() }

// ForPerson reports whether an interrupt of kind k is a task for a person
// (approve, answer, reply, review) rather than a wait on a system or on the
// caller's own code (external, client).
func (k Kind) ForPerson() bool { return k.Spec().ForPerson }

// Known reports whether k is one of the kinds of this version.
func (k Kind) Known() bool { return slices.Contains(AllKinds(), k) }

// Kinds lists the interrupt kinds, for messages that name them.
func Kinds() string {
	var names []string
	for _, k := range AllKinds() {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

// Decided reports whether an interrupt of kind k is answered by a decision
// (POST …/decisions) rather than by a message.
func (k Kind) Decided() bool { return k.Known() && !k.Spec().Reply }

// Actions are the decisions a person may make on the interrupt; see
// Kind.Actions. A call in doubt (InDoubt) also takes complete and fail:
// whoever knows how its work ended settles it with its result, or its
// error, instead of running it again.
func (in Interrupt) Actions() []Action {
	choices := in.Ask().Choices
	out := make([]Action, len(choices))
	for i, c := range choices {
		out[i] = c.Action
	}
	return out
}

// Interrupt is why a session is paused: a tool call that waits for a
// decision, a question, or an interactive agent waiting for the user.
type Interrupt struct {
	// ID is stable for the life of the pause and unique in the session.
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
	// Path is the chain of (agent, tool, call id) from the root frame to
	// the frame of the call; empty for a call of the root agent.
	Path      []PathStep      `json:"path"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Message is the rendered confirmation text (approval), or what the
	// system waited on said when it started (external).
	Message string `json:"message,omitempty"`
	// Preview, on an approval whose tool has a dry run (a config
	// "preview:", cairn.Tool.Preview), is what the call would do: computed
	// before the pause, stored with the interrupt, shown beside the
	// arguments. Untrusted output, normalised (Preview.Normalize).
	Preview *Preview `json:"preview,omitempty"`
	// Handle, on an external wait, is the started work's own id (a
	// pipeline run, a payment), as the tool gave it.
	Handle string `json:"handle,omitempty"`
	// ResultSchema, on an external or client call, is the JSON Schema its
	// result must match (Decision.Output on complete).
	ResultSchema json.RawMessage `json:"result_schema,omitempty"`
	// Question is what the tool asked (input).
	Question string `json:"question,omitempty"`
	// Schema, on a question, is the JSON Schema the answer must satisfy:
	// answer with Decision.Content, an object valid under it (an MCP
	// server's elicitation form).
	Schema json.RawMessage `json:"schema,omitempty"`
	// URL, on a question, is a page the user opens to do what is asked
	// (an MCP URL elicitation); answer when it is done.
	URL string `json:"url,omitempty"`
	// Text is what the interactive agent said (message).
	Text string `json:"text,omitempty"`
	// Remote, on a question a remote agent asked (a sub-agent over A2A),
	// is that agent's task: where the answer goes.
	Remote *Remote `json:"remote,omitempty"`
	// Output, on a review, is the proposed answer (a JSON value), and
	// OutputSchema the schema an edit must match.
	Output       json.RawMessage `json:"output,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// InDoubt marks a call that was running when the process stopped: it
	// may or may not have taken effect. IdempotencyKey is then the key it
	// ran with (see cairn.IdempotencyKey), to look it up downstream. It is
	// decided by approve (run it again), reject, or complete / fail when
	// its outcome is known: a result sent to the callback URL its run
	// handed out settles it too. ResultSchema is then its tool's.
	InDoubt        bool   `json:"in_doubt"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// ExpiresAt is when an approval counts as rejected without a decision,
	// or when an external wait's deadline passes (see Tool.Wait).
	ExpiresAt *time.Time `json:"expires_at"`
	// Schedule is when it reminds and escalates, and what did so far
	// (FiredAt); OnExpiry what happens at ExpiresAt without a decision
	// (nil: an approval is rejected). Both are resolved when it is asked.
	Schedule []ScheduledStep `json:"schedule,omitempty"`
	OnExpiry *OnExpiry       `json:"on_expiry,omitempty"`
	// Approvers, on an approval, limits who may approve it (groups, how
	// many people, not the requester); nil: any approver. Required is
	// Approvers.Count when it asks for more than one person, and Approvals
	// the approvals given so far (an edit of the arguments starts them
	// over). RequestedBy, under Approvers.NotRequester, is who asked for
	// the call: the session's starter and the sender of the message that
	// led to it. Authority.MayDecide reads them.
	Approvers   *Approvers `json:"approvers,omitempty"`
	Required    int        `json:"required,omitempty"`
	Approvals   []Approval `json:"approvals,omitempty"`
	RequestedBy []Actor    `json:"requested_by,omitempty"`
	// MayDecide, in an answer of the HTTP API, says whether the caller may
	// decide it (the runner's decision point; false: they may only see
	// it). Never recorded.
	MayDecide *bool `json:"may_decide,omitempty"`
	// Truncated, in a listing, names the fields shown cut short
	// ("arguments", "message", "question", "text", "preview"); cut
	// arguments, and a cut preview's content, are a string of their
	// start. The session has them whole.
	Truncated []string `json:"truncated,omitempty"`
}

// recorded is an interrupt as the log and the stored summaries keep it:
// without its Ask, which every reader derives afresh (an Ask repeats the
// arguments or the output as its choices' defaults).
type recorded Interrupt

// recordedAll is ins as recorded, nil for nil.
func recordedAll(ins []Interrupt) []recorded {
	if ins == nil {
		return nil
	}
	out := make([]recorded, len(ins))
	for i, in := range ins {
		in.MayDecide = nil // the caller's, not the session's
		out[i] = recorded(in)
	}
	return out
}

// MarshalJSON writes the interrupt with its Ask ("ask"), so a front end in
// any language renders any kind; reading an interrupt back ignores it. The
// log and the stored summaries keep it without (Session.MarshalStored, the
// payloads' MarshalJSON).
func (in Interrupt) MarshalJSON() ([]byte, error) {
	var scratch [512]byte
	if b, ok := appendInterrupt(scratch[:0], &in, true); ok {
		return append([]byte(nil), b...), nil
	}
	type plain Interrupt
	return segjson.Marshal(struct {
		plain
		Ask Ask `json:"ask"`
	}{plain(in), in.Ask()})
}

// Remote is a remote agent's task that asked a question (A2A): the
// agent's URL and the task's id there.
type Remote struct {
	URL    string `json:"url"`
	TaskID string `json:"task_id"`
}

// PathStep is one hop from the root frame towards a tool call: the agent,
// and its call (tool and call id) that created the next frame.
type PathStep struct {
	Agent  string `json:"agent"`
	Tool   string `json:"tool"`
	CallID string `json:"call_id"`
}

// PendingInterrupt is an interrupt in the cross-session approval inbox.
type PendingInterrupt struct {
	Interrupt
	SessionID string `json:"session_id"`
	// Tenant is the session's tenant (Session.Tenant).
	Tenant string `json:"tenant,omitempty"`
	// Seq is the seq a decision on this interrupt must name.
	Seq int64 `json:"seq"`
	// PausedAt is when the session paused (its last update).
	PausedAt time.Time `json:"paused_at"`
	// Suggestion, on an approval, is a standing rule the decision history
	// supports for calls like this one (see Suggestion).
	Suggestion *Suggestion `json:"suggestion,omitempty"`
}

// MarshalJSON writes the pending interrupt: its Interrupt, with its Ask,
// and where it waits (the embedded Interrupt's MarshalJSON would drop
// those).
func (p PendingInterrupt) MarshalJSON() ([]byte, error) {
	type plain Interrupt
	return segjson.Marshal(struct {
		plain
		Ask        Ask         `json:"ask"`
		SessionID  string      `json:"session_id"`
		Tenant     string      `json:"tenant,omitempty"`
		Seq        int64       `json:"seq"`
		PausedAt   time.Time   `json:"paused_at"`
		Suggestion *Suggestion `json:"suggestion,omitempty"`
	}{plain(p.Interrupt), p.Interrupt.Ask(), p.SessionID, p.Tenant, p.Seq, p.PausedAt, p.Suggestion})
}

// OnTimeout is what happens when an external call's deadline passes with
// no result.
type OnTimeout string

// Outcomes of a missed deadline.
const (
	// OnTimeoutError ends the call with an error result the model sees
	// (the default).
	OnTimeoutError OnTimeout = "error"
	// OnTimeoutRetry starts the tool again, with a new callback URL, up
	// to the tool's retry bound; then it counts as OnTimeoutError.
	OnTimeoutRetry OnTimeout = "retry"
	// OnTimeoutAsk asks a person (an approval interrupt): approve starts
	// the tool again, reject ends the call with the reason.
	OnTimeoutAsk OnTimeout = "ask"
)
