package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// Input is what drives a session forward: one of Start, Message, Decide,
// Cancel, ModelDone, ToolsDone, PreviewsDone, Recover, Interrupted, Expire.
type Input interface{ isInput() }

// Start opens a new session on an agent with the user's first message.
type Start struct {
	SessionID string
	// Nonce is the session's random nonce (session.Session.Nonce), drawn
	// by the driver: the engine has no randomness.
	Nonce    string
	Agent    string
	Text     string
	Metadata map[string]any
	// Owner is who started the session (an auth token's name), if known.
	Owner string
	// Actor is who sent the first message, recorded in its event; the
	// session belongs to its tenant (Actor.Tenant).
	Actor session.Actor
	// Call is the one call a session of a direct agent makes (Agent.Direct):
	// required for one, refused for any other.
	Call *session.CallRequest
	// Tools are tools the sender runs itself (UserMessage.Tools).
	Tools []model.ToolDefinition
	// Rules are the standing rules the driver found live for the agent's
	// tools (see ModelDone.Rules): a direct agent's call may match one.
	Rules []session.Rule `json:",omitempty"`
	// Definition, when set, is the definition the driver starts the
	// session under: the machine's agent must have it (Agent.Definition).
	// A durable driver carries it, so that a replay under another
	// deployment steps with the same machine.
	Definition string `json:",omitempty"`
}

// Message is the user's next message. It goes to the top of the stack: an
// interactive frame waiting for the user, or the root frame after a turn
// ended. Seq, when not zero, must be the session's current seq.
type Message struct {
	Text string
	Seq  int64
	// Actor is who sent it, recorded in its event for the audit trail.
	Actor session.Actor
	// Tools are tools the sender runs itself (UserMessage.Tools).
	Tools []model.ToolDefinition
}

// Decide answers some or all pending approval and input interrupts. Seq
// must be the session's current seq: two resumes of one pause cannot both win.
type Decide struct {
	Seq       int64
	Decisions []session.Decision
	Actor     session.Actor
	// Previews are the dry runs of edited arguments, by interrupt id, that
	// the driver computed for the decisions EditPreviews named: an edit of
	// a call that needs more approvers records its preview with it.
	Previews map[string]session.Preview `json:",omitempty"`
	// Batch is the bulk decision these are part of, recorded on their events.
	Batch string `json:",omitempty"`
}

// Cancel pops the top interactive frame (its parent sees "cancelled by the
// user") or unwinds the whole stack and ends the turn as cancelled.
type Cancel struct {
	Scope session.CancelScope
	Seq   int64 // 0: whatever is current
	// Actor is who cancelled, recorded in the cancellation's events.
	Actor session.Actor
}

// ModelDone reports the outcome of a CallModel effect.
type ModelDone struct {
	Frame    string
	Response *model.Response
	Err      error
	// Rules are the standing rules the driver read, live, for the tools
	// the response calls that a rule may decide (Tool.Rules): a call that
	// would wait for approval and that one of them matches is decided by
	// it instead (recorded with the rule's id). Read as late as possible:
	// a rule revoked before the read decides nothing.
	Rules []session.Rule `json:",omitempty"`
}

// ToolsDone reports the outcomes of a RunTools effect, one per call.
type ToolsDone struct {
	Frame   string
	Results []ToolOutcome
}

// ToolOutcome is the result of running one tool call: content, a question
// the tool asked (the call is re-run with the answer), or word that the
// tool cannot tell whether its work took effect.
type ToolOutcome struct {
	CallID  string
	Content string `json:",omitempty"`
	IsError bool   `json:",omitempty"`
	// Question, Schema and URL: the tool asked the user (see
	// session.Interrupt); the session pauses with an input interrupt.
	Question string          `json:",omitempty"`
	Schema   json.RawMessage `json:",omitempty"`
	URL      string          `json:",omitempty"`
	// Held: the tool keeps its work in flight across the pause, so a
	// rejection runs it again with a declined answer instead of ending it.
	Held bool `json:",omitempty"`
	// State is what the tool keeps for when it runs again (recorded with
	// the question, given back with its answer); Remote and Path, on a
	// question a remote agent asked, are its task and the hops through it
	// (appended to the call's path).
	State  json.RawMessage    `json:",omitempty"`
	Remote *session.Remote    `json:",omitempty"`
	Path   []session.PathStep `json:",omitempty"`
	// Approval: the question is an approval (Question is what is
	// approved): approvers decide it, and the tool runs again with the
	// decision.
	Approval bool `json:",omitempty"`
	// InDoubt: the tool's work may or may not have taken effect (it lost
	// work it held); the call pauses as an in-doubt approval.
	InDoubt bool `json:",omitempty"`
	// Pending: the tool started work that finishes later; the call waits
	// for its result (an interrupt of kind external).
	Pending *Pending `json:",omitempty"`
}

// Pending is what a tool that finishes later said when it started: the
// work's own id and a message for whoever looks at the wait.
type Pending struct {
	Handle  string `json:",omitempty"`
	Message string `json:",omitempty"`
}

func (o ToolOutcome) asks() bool {
	return o.Question != "" || len(o.Schema) > 0 || o.URL != "" || o.Approval
}

// Expire ends every wait whose ExpiresAt has passed and lets the session go
// on: an approval counts as rejected ("approval expired"); an external
// call's deadline has the tool's outcome (Wait.OnTimeout). Conflict when
// none is due.
type Expire struct{}

// Interrupted records that the driver stopped a running turn before its
// end (its context was cancelled, or its process shuts down): the session
// stays running, and whoever takes it over goes on with Recover.
type Interrupted struct {
	Reason string
}

// Recover continues a session found running after its driver stopped (a
// crash, kill -9). A call that was started and has no result is not re-run
// silently: unless its tool is idempotent, the session pauses with an
// in-doubt approval interrupt for it.
type Recover struct{}

func (Start) isInput()       {}
func (Message) isInput()     {}
func (Decide) isInput()      {}
func (Cancel) isInput()      {}
func (ModelDone) isInput()   {}
func (ToolsDone) isInput()   {}
func (Recover) isInput()     {}
func (Interrupted) isInput() {}
func (Expire) isInput()      {}

// Effect is work the driver performs and reports back as an Input.
type Effect interface{ isEffect() }

// CallModel asks the driver to call the frame's agent's model and report ModelDone.
type CallModel struct {
	Frame   string
	Agent   string
	Request *model.Request
}

// RunTools asks the driver to run the calls (concurrently is fine) and report
// ToolsDone with the outcomes in the same order.
type RunTools struct {
	// Session is the id of the session whose calls these are, Nonce its
	// nonce (State.Nonce), and Definition the definition it runs under
	// (State.Definition): the tools to run are that definition's.
	Session, Nonce, Definition string
	Frame                      string
	Agent                      string
	Calls                      []ToolRun
}

// ToolRun is one call to execute.
type ToolRun struct {
	CallID         string
	Tool           string
	Args           json.RawMessage
	IdempotencyKey string
	// Answers are the user's answers to the questions this call asked so far.
	Answers []session.Answer
	// Waits counts the times this call waited on a system before (each
	// retry after a missed deadline adds one): with IdempotencyKey it names
	// the wait this run may start (WaitID), with Reruns.
	Waits int `json:",omitempty"`
	// Reruns counts the times a person had this call run again after it
	// was in doubt.
	Reruns int `json:",omitempty"`
}

func (CallModel) isEffect() {}
func (RunTools) isEffect()  {}

// Step is the outcome of one input: events to append (already applied to the
// state) and effects to perform next.
type Step struct {
	Events []session.Event
	// Payloads[i] is the data of Events[i] as the engine built it (a
	// *DecisionMade for a decision, a *TurnPaused for turn_paused, …), so
	// that a driver reads what it needs of its own events without decoding
	// them again. Read them before the state's next Step; never change them.
	Payloads []any
	Effects  []Effect
	// Copied, on a fork's first step, counts its first events that are a
	// copy of another session's log: recorded, and announced by no webhook.
	Copied int
	// stepper holds Events, Payloads and Effects (Machine.Recycle).
	stepper *stepper
}

// Machine is the engine for a fixed set of agents. It is safe for concurrent
// use; each State must be used by one goroutine at a time.
type Machine struct {
	agents   map[string]*Agent
	opts     Options
	encoding payloadEncoding
	// steppers are the recycled steppers (Recycle): a step's memory, in
	// the processor's cache, instead of a new object a step (Step).
	steppers sync.Pool
}

// Options adjust a Machine.
type Options struct {
	// AutoApprove approves every call that would wait for approval, each
	// recorded as a decision by {"name":"cairn","role":"auto-approve"}. For
	// tests and trusted runs.
	AutoApprove bool
	// CheckAnswer validates an answer's content against the JSON Schema of
	// the question it answers, and a requested call's arguments against
	// the request's (session.CallRequest.Schema); nil checks only that it
	// is an object.
	CheckAnswer func(schema json.RawMessage, content any) error
	// Authority decides who may decide an interrupt: every Decide's actor
	// is checked against it (session.Authority.MayDecide).
	Authority session.Authority
	// RuleCondition evaluates a standing rule's condition (a CEL
	// expression over args) on a call's decoded arguments; nil: a rule
	// with a condition matches nothing and none can be granted.
	RuleCondition func(expr string, args any) (bool, error)
}

// New returns a machine for agents, keyed by name. opts may be nil.
func New(agents map[string]*Agent, opts *Options) *Machine {
	m := &Machine{agents: agents}
	if opts != nil {
		m.opts = *opts
	}
	return m
}

// Step applies one input to st at time now. On a refused input (an *Error
// with any code but CodeInternal) st is unchanged and nothing is to be
// recorded. Step never panics: an engine fault is returned as an *Error with
// CodeInternal, after which st may be partly changed and must be discarded
// (reload it from the log).
func (m *Machine) Step(st *State, in Input, now time.Time) (out Step, err error) {
	s, _ := m.steppers.Get().(*stepper)
	if s == nil {
		s = &stepper{}
	}
	s.m, s.st, s.now = m, st, now
	defer func() {
		if p := recover(); p != nil {
			out, err = Step{}, &session.Error{Code: session.CodeInternal, Message: fmt.Sprintf("engine fault on %T for session %s: %v", in, st.SessionID, p)}
		}
		if err != nil {
			m.Recycle(&Step{stepper: s}) // nothing of it is returned
		}
	}()
	var undo func()
	if in, undo = s.followLatest(in); undo != nil {
		defer func() {
			if err != nil {
				undo() // a refused input leaves st as it was
			}
		}()
	}
	switch in := in.(type) {
	case Start:
		s.rules = in.Rules
		err = s.start(in)
	case Message:
		err = s.message(in)
	case Decide:
		err = s.decide(in)
	case Cancel:
		err = s.cancel(in)
	case ModelDone:
		s.rules = in.Rules
		err = s.modelDone(in)
	case ToolsDone:
		err = s.toolsDone(in)
	case Recover:
		err = s.recover()
	case Interrupted:
		if st.Status != session.StatusRunning {
			return Step{}, errorf(session.CodeConflict, "session %s is %s: no turn to interrupt", st.SessionID, st.Status)
		}
		s.emit(session.EventTurnInterrupted, st.Root(), &TurnInterrupted{Reason: in.Reason})
	case Expire:
		err = s.expire()
	case PreviewsDone:
		err = s.previewsDone(in)
	default:
		err = fmt.Errorf("engine: unknown input %T", in)
	}
	if err != nil {
		return Step{}, err
	}
	s.chain()
	return Step{Events: s.out, Payloads: s.payloads, Effects: s.effects, stepper: s}, nil
}

// Recycle gives a step's memory back to the machine for its next steps:
// step's Events, Payloads and Effects (and any slice of them, not the
// values copied out) must not be used after it. Callers that never
// recycle lose nothing but speed: a step costs a new object of about
// 900 bytes, which BenchmarkTurn's profile showed as a tenth of a turn
// (allocating, then first touching memory out of the cache). Copies of a
// Step share its memory: recycle one of them, once. A step of another
// machine, or not from Step, is left to the garbage collector.
func (m *Machine) Recycle(step *Step) {
	s := step.stepper
	if s == nil || s.m != m {
		return
	}
	*step = Step{}
	*s = stepper{} // drops what it points to; the next step starts clean
	m.steppers.Put(s)
}

type stepper struct {
	m        *Machine
	st       *State
	now      time.Time
	out      []session.Event
	payloads []any // of out
	effects  []Effect
	// previews are the dry runs a PreviewsDone brought, by interrupt id,
	// for the pause this step records; editPreviews those a Decide brought
	// for edited arguments.
	previews, editPreviews map[string]session.Preview
	// batch is the bulk decision a Decide is part of.
	batch string
	// rules are the standing rules a ModelDone or Start brought.
	rules []session.Rule
	// room is where out, payloads and effects start: most steps record
	// 2–4 events and one effect, so a step allocates once (the stepper),
	// not once per slice.
	room struct {
		out      [4]session.Event
		payloads [4]any
		effects  [1]Effect
	}
	// hashes are out's hashes, one after another (see chain), and head
	// the session's hash before the step.
	hashes strings.Builder
	head   string
}

// followLatest records definition_changed when the session's agent follows
// the latest definition (Agent.FollowLatest) and this machine's is not the
// one the session ran under: first, so what the input does is done under
// the new one. It returns the input, its seq moved past the event when it
// named the session's current one, and what puts st back if the input is
// refused (nil when it recorded nothing).
func (s *stepper) followLatest(in Input) (Input, func()) {
	switch in.(type) {
	case Start, Interrupted:
		return in, nil // a new session starts under this one; an interrupted turn does nothing
	}
	st := s.st
	a := s.m.agents[st.Agent]
	if a == nil || !a.FollowLatest || a.Definition == "" || st.Definition == "" || a.Definition == st.Definition || st.Seq == 0 {
		return in, nil
	}
	seq, updated, head, from := st.Seq, st.UpdatedAt, st.Head, st.Definition
	s.emit(session.EventDefinitionChanged, nil, &DefinitionChanged{From: from, To: a.Definition})
	// The caller saw the session before the event: its seq is current.
	switch v := in.(type) {
	case Decide:
		if v.Seq == seq {
			v.Seq = st.Seq
		}
		in = v
	case Message:
		if v.Seq == seq {
			v.Seq = st.Seq
		}
		in = v
	case Cancel:
		if v.Seq == seq {
			v.Seq = st.Seq
		}
		in = v
	}
	return in, func() { st.Seq, st.UpdatedAt, st.Head, st.Definition = seq, updated, head, from }
}

// chain sets the Hash and Prev of the step's events and the state's Head,
// from hashes: one string for the step's hashes, not one per event.
func (s *stepper) chain() {
	if len(s.out) == 0 {
		return
	}
	all := s.hashes.String()
	prev := s.head
	for i := range s.out {
		s.out[i].Prev, s.out[i].Hash = prev, all[i*session.HashLen:(i+1)*session.HashLen]
		prev = s.out[i].Hash
	}
	s.st.Head = prev
}

// emit records an event and applies it. Payloads are built by the engine from
// validated data, so a marshal or projection failure is a bug, not bad input.
func (s *stepper) emit(typ session.EventType, f *Frame, payload eventData) {
	data, err := s.m.encoding.marshal(payload)
	if err != nil {
		panic(fmt.Sprintf("engine: marshal %s: %v", typ, err))
	}
	ev := session.Event{Seq: s.st.Seq + 1, Type: typ, Time: s.now, Data: data}
	if f != nil {
		ev.Frame, ev.Agent = f.ID, f.Agent
	}
	prev := s.head
	if s.out == nil {
		s.out, s.payloads, s.head, prev = s.room.out[:0], s.room.payloads[:0], s.st.Head, s.st.Head
		s.hashes.Grow(2 * session.HashLen) // most steps record two events
	} else if n := s.hashes.Len(); n > 0 {
		prev = s.hashes.String()[n-session.HashLen:] // no copy: see strings.Builder
	}
	if err := apply(s.st, &ev, payload); err != nil {
		panic(fmt.Sprintf("engine: apply %s: %v", typ, err))
	}
	// Chained after apply, which sets the session id of the first event;
	// the hashes are one string, set on the events when the step ends
	// (chain), not a string each.
	var hash [session.HashLen]byte
	s.hashes.Write(session.AppendEventHash(hash[:0], s.st.SessionID, &ev, prev))
	s.out = append(s.out, ev)
	s.payloads = append(s.payloads, payload)
}
