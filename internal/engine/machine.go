package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// Input is what drives a session forward: one of Start, Message, Decide,
// Cancel, ModelDone, ToolsDone, Recover.
type Input interface{ isInput() }

// Start opens a new session on an agent with the user's first message.
type Start struct {
	SessionID string
	Agent     string
	Text      string
	Metadata  map[string]any
	// Owner is who started the session (an auth token's name), if known.
	Owner string
}

// Message is the user's next message. It goes to the top of the stack: an
// interactive frame waiting for the user, or the root frame after a turn
// ended. Seq, when not zero, must be the session's current seq.
type Message struct {
	Text string
	Seq  int64
}

// Decide answers some or all pending approval and input interrupts. Seq
// must be the session's current seq: two resumes of one pause cannot both win.
type Decide struct {
	Seq       int64
	Decisions []session.Decision
	Actor     session.Actor
}

// Cancel scopes.
const (
	CancelTop = "top"
	CancelAll = "all"
)

// Cancel pops the top interactive frame (its parent sees "cancelled by the
// user") or unwinds the whole stack and ends the turn as cancelled.
type Cancel struct {
	Scope string
	Seq   int64 // 0: whatever is current
}

// ModelDone reports the outcome of a CallModel effect.
type ModelDone struct {
	Frame    string
	Response *model.Response
	Err      error
}

// ToolsDone reports the outcomes of a RunTools effect, one per call.
type ToolsDone struct {
	Frame   string
	Results []ToolOutcome
}

// ToolOutcome is the result of running one tool call: content, or a
// question the tool asked (the call is re-run with the answer).
type ToolOutcome struct {
	CallID   string
	Content  string
	IsError  bool
	Question string
}

// Expire rejects, with the reason "approval expired", every approval whose
// ExpiresAt has passed, and lets the session go on. Conflict when none is due.
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
	Frame string
	Agent string
	Calls []ToolRun
}

// ToolRun is one call to execute.
type ToolRun struct {
	CallID         string
	Tool           string
	Args           json.RawMessage
	IdempotencyKey string
	// Answers are the user's answers to the questions this call asked so far.
	Answers []string
}

func (CallModel) isEffect() {}
func (RunTools) isEffect()  {}

// Step is the outcome of one input: events to append (already applied to the
// state) and effects to perform next.
type Step struct {
	Events  []session.Event
	Effects []Effect
}

// CompleteTool is the tool interactive frames call to end and hand their
// result to the parent.
const CompleteTool = "complete"

var completeDefinition = model.ToolDefinition{
	Name:        CompleteTool,
	Description: "Call when your task is done: the result goes back to the agent that started you, and the user's conversation returns to it.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"result":{"type":"string","description":"what you found or did"}},"required":["result"],"additionalProperties":false}`),
}

// Machine is the engine for a fixed set of agents. It is safe for concurrent
// use; each State must be used by one goroutine at a time.
type Machine struct {
	agents map[string]*Agent
	opts   Options
}

// Options adjust a Machine.
type Options struct {
	// AutoApprove approves every call that would wait for approval, each
	// recorded as a decision by {"name":"cairn","role":"auto-approve"}. For
	// tests and trusted runs.
	AutoApprove bool
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
	s := &stepper{m: m, st: st, now: now}
	defer func() {
		if p := recover(); p != nil {
			out, err = Step{}, &session.Error{Code: session.CodeInternal, Message: fmt.Sprintf("engine fault on %T for session %s: %v", in, st.SessionID, p)}
		}
	}()
	switch in := in.(type) {
	case Start:
		err = s.start(in)
	case Message:
		err = s.message(in)
	case Decide:
		err = s.decide(in)
	case Cancel:
		err = s.cancel(in)
	case ModelDone:
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
	default:
		err = fmt.Errorf("engine: unknown input %T", in)
	}
	if err != nil {
		return Step{}, err
	}
	return Step{Events: s.out, Effects: s.effects}, nil
}

type stepper struct {
	m       *Machine
	st      *State
	now     time.Time
	out     []session.Event
	effects []Effect
}

// emit records an event and applies it. Payloads are built by the engine from
// validated data, so a marshal or projection failure is a bug, not bad input.
func (s *stepper) emit(typ string, f *Frame, payload eventData) {
	data, err := json.Marshal(payload)
	if err != nil {
		panic(fmt.Sprintf("engine: marshal %s: %v", typ, err))
	}
	ev := session.Event{Seq: s.st.Seq + 1, Type: typ, Time: s.now, Data: data}
	if f != nil {
		ev.Frame, ev.Agent = f.ID, f.Agent
	}
	if err := apply(s.st, &ev, payload); err != nil {
		panic(fmt.Sprintf("engine: apply %s: %v", typ, err))
	}
	s.out = append(s.out, ev)
}

func (s *stepper) newFrameID() string { return "f" + strconv.Itoa(s.st.frames+1) }

func (s *stepper) start(in Start) error {
	if s.st.Seq != 0 {
		return errorf(session.CodeConflict, "session %s already exists", s.st.SessionID)
	}
	if s.m.agents[in.Agent] == nil {
		return errorf(session.CodeUnknownAgent, "unknown agent %q; configured agents: %s", in.Agent, strings.Join(s.m.agentNames(), ", "))
	}
	s.emit(session.EventSessionStarted, nil, &SessionStarted{SessionID: in.SessionID, Agent: in.Agent, Frame: s.newFrameID(), Metadata: in.Metadata, Owner: in.Owner})
	s.emit(session.EventUserMessage, s.st.Root(), &UserMessage{Text: in.Text})
	s.advance()
	return nil
}

func (s *stepper) message(in Message) error {
	st := s.st
	if in.Seq != 0 && in.Seq != st.Seq {
		return errorf(session.CodeConflict, "stale seq %d: session %s is at seq %d; reload it and retry", in.Seq, st.SessionID, st.Seq)
	}
	top := st.Top()
	switch st.Status {
	case session.StatusCompleted, session.StatusFailed, session.StatusCancelled:
	case session.StatusPaused:
		for _, in := range st.Interrupts() {
			if in.Kind != session.KindMessage {
				return errorf(session.CodeConflict, "session %s waits for %d decision(s) or answer(s): decide them first (POST …/decisions)", st.SessionID, countDecisions(st))
			}
		}
		if top == nil || top.SaidSeq == 0 {
			return errorf(session.CodeConflict, "session %s is paused but its top frame is not waiting for a message", st.SessionID)
		}
	default:
		return errorf(session.CodeConflict, "session %s is %s: wait until its turn ends", st.SessionID, st.Status)
	}
	s.emit(session.EventUserMessage, top, &UserMessage{Text: in.Text})
	s.advance()
	return nil
}

func countDecisions(st *State) int {
	n := 0
	for _, in := range st.Interrupts() {
		if in.Kind != session.KindMessage {
			n++
		}
	}
	return n
}

func (s *stepper) cancel(in Cancel) error {
	st := s.st
	if in.Seq != 0 && in.Seq != st.Seq {
		return errorf(session.CodeConflict, "stale seq %d: session %s is at seq %d", in.Seq, st.SessionID, st.Seq)
	}
	running := st.Status == session.StatusRunning
	if !running && st.Status != session.StatusPaused {
		return errorf(session.CodeConflict, "session %s is %s: only a paused or running session can be cancelled", st.SessionID, st.Status)
	}
	if running && in.Scope == CancelTop {
		return errorf(session.CodeConflict, "session %s is running: cancel it with scope all, or wait until it pauses", st.SessionID)
	}
	switch in.Scope {
	case CancelTop:
		top := st.Top()
		if top == nil || top.Mode != ModeInteractive {
			return errorf(session.CodeConflict, "session %s has no interactive frame to cancel", st.SessionID)
		}
		s.emit(session.EventFramePopped, top, &FramePopped{Frame: top.ID, Reason: PopCancelled, IsError: true,
			Result: fmt.Sprintf("agent %q was cancelled by the user", top.Agent)})
		s.advance()
	case CancelAll:
		root := st.Root()
		for _, c := range root.Calls {
			switch c.State {
			case CallDone:
			case CallStarted: // its runner stopped while it ran
				s.emit(session.EventToolResult, root, &ToolResult{CallID: c.ID, Tool: c.Tool, IsError: true,
					Content: "cancelled by the user while it was running: it may or may not have taken effect"})
			default:
				s.emit(session.EventToolResult, root, &ToolResult{CallID: c.ID, Tool: c.Tool, IsError: true, Content: "cancelled by the user"})
			}
		}
		s.emit(session.EventTurnCancelled, root, &TurnCancelled{Reason: "cancelled by the user"})
	default:
		return errorf(session.CodeInvalidRequest, "scope: %q is not one of top, all", in.Scope)
	}
	return nil
}

func (s *stepper) modelDone(in ModelDone) error {
	st := s.st
	f := st.frame(in.Frame)
	if st.Status != session.StatusRunning || f == nil || len(f.Calls) > 0 || f.SaidSeq != 0 {
		return errorf(session.CodeConflict, "session %s does not expect a model response for frame %q", st.SessionID, in.Frame)
	}
	if in.Err == nil && in.Response == nil {
		in.Err = errors.New("the model returned no response")
	}
	if in.Err != nil {
		why := session.Failure{Code: "model_error", Message: fmt.Sprintf("agent %q: model call failed: %v", f.Agent, in.Err)}
		errors.As(in.Err, &why.Provider) // the status and request id survive the log
		s.failFrame(f, why)
		s.advance()
		return nil
	}
	msg := normalizeReply(in.Response.Message)
	msg.Agent = f.Agent
	s.emit(session.EventModelResponse, f, &ModelResponse{Message: msg, Usage: in.Response.Usage})
	if len(msg.ToolCalls) == 0 {
		s.finishFrame(f, msg.Content)
	}
	s.advance()
	return nil
}

// finishFrame handles a frame's final text: the root answers the user, a
// tool-mode child gives its result to the parent, an interactive child
// speaks to the user and waits.
func (s *stepper) finishFrame(f *Frame, text string) {
	switch f.Mode {
	case ModeMain:
		s.emit(session.EventTurnCompleted, f, &TurnCompleted{Output: text})
	case ModeTool:
		s.emit(session.EventFramePopped, f, &FramePopped{Frame: f.ID, Reason: PopCompleted, Result: text})
	case ModeInteractive:
		s.emit(session.EventAgentMessage, f, &AgentMessage{Text: text})
	}
}

// failFrame ends a frame with an error: at the root the turn fails; in a
// child the error becomes the parent's (error) tool result.
func (s *stepper) failFrame(f *Frame, why session.Failure) {
	if f.Parent == "" {
		s.emit(session.EventTurnFailed, f, &TurnFailed{Error: why})
		return
	}
	s.emit(session.EventFramePopped, f, &FramePopped{Frame: f.ID, Reason: PopFailed, Result: why.Message, IsError: true})
}

func (s *stepper) toolsDone(in ToolsDone) error {
	st := s.st
	f := st.frame(in.Frame)
	if f == nil {
		return errorf(session.CodeConflict, "session %s has no frame %q", st.SessionID, in.Frame)
	}
	reported := make(map[string]bool, len(in.Results))
	for _, r := range in.Results {
		c := f.call(r.CallID)
		if c == nil || c.State != CallStarted || reported[r.CallID] {
			return errorf(session.CodeConflict, "session %s: call %q of frame %q is not running", st.SessionID, r.CallID, in.Frame)
		}
		reported[r.CallID] = true
	}
	for _, r := range in.Results {
		c := f.call(r.CallID)
		if r.Question != "" {
			path := append(st.pathTo(f), session.PathStep{Agent: f.Agent, Tool: c.Tool, CallID: c.ID})
			in := session.Interrupt{ID: derivedID(st.SessionID, f.ID, c.Origin, c.ID, "input/"+strconv.Itoa(len(c.Answers))),
				Kind: session.KindInput, Path: path, Tool: c.Tool, Arguments: json.RawMessage(c.Args), Question: r.Question}
			s.emit(session.EventInputRequested, f, &InterruptRequested{CallID: c.ID, Interrupt: in})
			continue
		}
		s.emit(session.EventToolResult, f, &ToolResult{CallID: c.ID, Tool: c.Tool, Content: r.Content, IsError: r.IsError})
	}
	s.advance()
	return nil
}

func (s *stepper) expire() error {
	st := s.st
	if st.Status != session.StatusPaused {
		return errorf(session.CodeConflict, "session %s is %s: nothing to expire", st.SessionID, st.Status)
	}
	due := 0
	for _, f := range st.Ordered() {
		for _, c := range f.Calls {
			in := c.Interrupt
			if c.State != CallAwaiting || in == nil || in.ExpiresAt == nil || s.now.Before(*in.ExpiresAt) {
				continue
			}
			due++
			s.emit(session.EventDecision, f, &DecisionMade{InterruptID: in.ID, Kind: in.Kind, CallID: c.ID, Tool: c.Tool, Action: session.ActionReject,
				Reason: "approval expired", Arguments: json.RawMessage(c.Args), ArgsDigest: digest(c.Args), Actor: session.Actor{Name: "cairn", Role: "expiry"}})
			s.emit(session.EventToolResult, f, &ToolResult{CallID: c.ID, Tool: c.Tool, IsError: true,
				Content: fmt.Sprintf("approval expired: nobody decided on this call by %s, so it did not run", in.ExpiresAt.UTC().Format(time.RFC3339))})
		}
	}
	if due == 0 {
		return errorf(session.CodeConflict, "session %s has no expired approval", st.SessionID)
	}
	s.advance()
	return nil
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func (s *stepper) recover() error {
	st := s.st
	if st.Status != session.StatusRunning {
		return errorf(session.CodeConflict, "session %s is %s, not running: nothing to recover", st.SessionID, st.Status)
	}
	for _, f := range st.Ordered() {
		agent := s.m.agents[f.Agent]
		for _, c := range f.Calls {
			if c.State != CallStarted {
				continue
			}
			if agent != nil && agent.Tools[c.Tool] != nil && agent.Tools[c.Tool].Idempotent {
				// Recorded as a decision so the log says why it ran twice.
				s.emit(session.EventDecision, f, &DecisionMade{CallID: c.ID, Kind: session.KindApproval, Tool: c.Tool, Action: session.ActionApprove,
					Reason: "idempotent tool re-run after a crash", Arguments: json.RawMessage(c.Args), Actor: session.Actor{Name: "cairn", Role: "recovery"}})
				continue
			}
			in := session.Interrupt{
				ID: derivedID(st.SessionID, f.ID, c.Origin, c.ID, "in_doubt"), Kind: session.KindApproval, InDoubt: true,
				Path: append(st.pathTo(f), session.PathStep{Agent: f.Agent, Tool: c.Tool, CallID: c.ID}),
				Tool: c.Tool, Arguments: json.RawMessage(c.Args),
				Message: fmt.Sprintf("Cairn stopped while tool %s was running with arguments %s; it may or may not have taken effect. Approve to run it again; reject to tell the model it did not complete.", c.Tool, c.Args),
			}
			s.emit(session.EventApprovalRequested, f, &InterruptRequested{CallID: c.ID, Interrupt: in})
		}
	}
	s.advance()
	return nil
}

// advance moves the session as far as it goes without I/O (DESIGN.md §3):
// frames run depth first; in each, new calls are classified, approved calls
// start or push child frames, and a frame whose calls all have results
// calls its model. It stops at the first effect, or pauses when nothing can
// move without a person.
func (s *stepper) advance() {
	for s.st.Status == session.StatusRunning {
		if len(s.out) > maxEventsPerStep {
			// Every sweep that changes something records an event, so this
			// bounds the loop even if some input defeats the engine's logic.
			s.emit(session.EventTurnFailed, s.st.Root(), &TurnFailed{Error: session.Failure{Code: "internal",
				Message: fmt.Sprintf("engine: a step recorded more than %d events; the turn was stopped", maxEventsPerStep)}})
			return
		}
		eff, changed := s.pass()
		if eff != nil {
			s.effects = append(s.effects, eff)
			return
		}
		if !changed {
			break
		}
	}
	if s.st.Status != session.StatusRunning {
		return
	}
	ins := s.st.Interrupts()
	if len(ins) == 0 {
		// Unreachable by construction; fail loudly rather than hang.
		s.emit(session.EventTurnFailed, s.st.Root(), &TurnFailed{Error: session.Failure{Code: "internal", Message: "engine: the session can neither move nor pause"}})
		return
	}
	s.emit(session.EventTurnPaused, s.st.Root(), &TurnPaused{Interrupts: ins})
}

// maxEventsPerStep bounds the events one input may record.
const maxEventsPerStep = 10000

// pass makes one sweep over the frames. It returns the next effect, or
// whether it recorded anything (the frame tree may have changed: sweep again).
func (s *stepper) pass() (Effect, bool) {
	for _, f := range s.st.Ordered() {
		if f.SaidSeq != 0 {
			continue // waits for the user
		}
		agent := s.m.agents[f.Agent]
		if agent == nil {
			s.failFrame(f, session.Failure{Code: "unknown_agent", Message: fmt.Sprintf("agent %q is no longer configured", f.Agent)})
			return nil, true
		}
		if len(f.Calls) == 0 {
			if agent.MaxIterations > 0 && f.Iterations >= agent.MaxIterations {
				s.failFrame(f, session.Failure{Code: "max_iterations",
					Message: fmt.Sprintf("agent %q stopped after %d iterations without a final answer (max_iterations: %d)", f.Agent, f.Iterations, agent.MaxIterations)})
				return nil, true
			}
			tools := agent.Definitions
			if f.Mode == ModeInteractive {
				tools = append(tools[:len(tools):len(tools)], completeDefinition)
			}
			return CallModel{Frame: f.ID, Agent: f.Agent, Request: &model.Request{
				Agent: f.Agent, System: agent.Instructions, Messages: f.Messages, Tools: tools,
			}}, false
		}
		if eff, changed := s.advanceCalls(agent, f); eff != nil || changed {
			return eff, changed
		}
	}
	return nil, false
}

// advanceCalls moves the calls of one frame's assistant message.
func (s *stepper) advanceCalls(agent *Agent, f *Frame) (Effect, bool) {
	// A handoff or complete ends the frame's work on this message, so they
	// are carried out before anything else of it runs.
	for _, c := range f.Calls {
		if c.State != CallNew {
			continue
		}
		if t := agent.Tools[c.Tool]; t != nil && t.Kind == ToolHandoff {
			s.handoff(f, c, t.Target)
			return nil, true
		}
		if c.Tool == CompleteTool && f.Mode == ModeInteractive {
			if result, ok := s.completeResult(f, c); ok {
				s.emit(session.EventFramePopped, f, &FramePopped{Frame: f.ID, Reason: PopCompleted, Result: result})
			}
			return nil, true
		}
	}
	changed := false
	var runs []ToolRun
	for _, c := range f.Calls {
		switch c.State {
		case CallNew:
			ok, args := s.classify(agent, f, c)
			if !ok {
				changed = true
				continue
			}
			if run, started, pushed := s.begin(agent, f, c, args); started {
				runs = append(runs, run)
			} else if pushed {
				changed = true
			}
		case CallApproved:
			v, err := decodeArgs(json.RawMessage(c.Args))
			if err != nil { // approved arguments are validated; a log from elsewhere may not be
				s.emit(session.EventToolResult, f, &ToolResult{CallID: c.ID, Tool: c.Tool, IsError: true,
					Content: fmt.Sprintf("the approved arguments of tool %q are not a JSON object (%v); the call did not run", c.Tool, err)})
				changed = true
				continue
			}
			if run, started, pushed := s.begin(agent, f, c, v); started {
				runs = append(runs, run)
			} else if pushed {
				changed = true
			}
		}
	}
	if len(runs) > 0 {
		return RunTools{Frame: f.ID, Agent: f.Agent, Calls: runs}, true
	}
	return nil, changed
}

// classify checks a call the model just made. It reports whether the call
// may begin now; otherwise it recorded an error result or an approval
// request, or (an interactive call waiting its turn) nothing.
func (s *stepper) classify(agent *Agent, f *Frame, c *Call) (bool, any) {
	fail := func(msg string) (bool, any) {
		s.emit(session.EventToolResult, f, &ToolResult{CallID: c.ID, Tool: c.Tool, Content: msg, IsError: true})
		return false, nil
	}
	tool := agent.Tools[c.Tool]
	if tool == nil {
		return fail(fmt.Sprintf("unknown tool %q; available tools: %s", c.Tool, strings.Join(agent.toolNames(f.Mode), ", ")))
	}
	// c.Args is canonical already (see canonicalArgs): the engine only reads it here.
	v, err := decodeArgs(json.RawMessage(c.Args))
	if err != nil {
		return fail(fmt.Sprintf("the arguments of tool %q are not valid JSON (%v); send a JSON object matching its schema", c.Tool, err))
	}
	if tool.Validate != nil {
		if _, err := guarded("the validator", func() (struct{}, error) { return struct{}{}, tool.Validate(v) }); err != nil {
			return fail(fmt.Sprintf("the arguments of tool %q do not match its schema: %v", c.Tool, err))
		}
	}
	args := ToolArgs{Raw: json.RawMessage(c.Args), Value: v}
	need, note := false, ""
	if tool.NeedsApproval != nil && !s.st.remembered(f.Agent, c.Tool) {
		need, err = guarded("the approval policy", func() (bool, error) { return tool.NeedsApproval(args) })
		if err != nil {
			// Fail closed: a policy that cannot be evaluated asks a person.
			need, note = true, fmt.Sprintf(" (approval policy could not be evaluated: %v)", err)
		}
	}
	if !need {
		return true, v
	}
	if s.m.opts.AutoApprove {
		s.emit(session.EventDecision, f, &DecisionMade{InterruptID: derivedID(s.st.SessionID, f.ID, c.Origin, c.ID, ""), Kind: session.KindApproval,
			CallID: c.ID, Tool: c.Tool, Action: session.ActionApprove, Reason: "auto-approved: the runner approves every call",
			Arguments: json.RawMessage(c.Args), ArgsDigest: digest(c.Args), Actor: session.Actor{Name: "cairn", Role: "auto-approve"}})
		return true, v
	}
	msg := ""
	if tool.Confirm != nil {
		msg, err = guarded("the confirmation template", func() (string, error) { return tool.Confirm(args) })
	}
	if tool.Confirm == nil || err != nil {
		msg = fmt.Sprintf("Run tool %s with arguments %s?", c.Tool, c.Args)
	}
	in := session.Interrupt{
		ID: derivedID(s.st.SessionID, f.ID, c.Origin, c.ID, ""), Kind: session.KindApproval,
		Path: append(s.st.pathTo(f), session.PathStep{Agent: f.Agent, Tool: c.Tool, CallID: c.ID}),
		Tool: c.Tool, Arguments: json.RawMessage(c.Args), Message: msg + note,
	}
	if tool.ApprovalTTL > 0 {
		exp := s.now.Add(tool.ApprovalTTL).UTC()
		in.ExpiresAt = &exp
	}
	s.emit(session.EventApprovalRequested, f, &InterruptRequested{CallID: c.ID, Interrupt: in})
	return false, nil
}

// begin carries out an approved call: a function tool starts (and must be
// run by the driver); an agent tool pushes a child frame, unless it is
// interactive and another interactive frame holds the conversation, in
// which case it waits its turn.
func (s *stepper) begin(agent *Agent, f *Frame, c *Call, args any) (run ToolRun, started, pushed bool) {
	tool := agent.Tools[c.Tool]
	if tool == nil { // the agent's tools changed since the call was approved
		s.emit(session.EventToolResult, f, &ToolResult{CallID: c.ID, Tool: c.Tool, IsError: true,
			Content: fmt.Sprintf("tool %q is no longer available; the call did not run", c.Tool)})
		return ToolRun{}, false, true
	}
	if tool.Kind != ToolAgent {
		return s.startCall(f, c), true, false
	}
	if tool.Mode == ModeInteractive && s.interactiveBusy(f) {
		return ToolRun{}, false, false
	}
	m, _ := args.(map[string]any)
	input, _ := m["input"].(string)
	s.emit(session.EventFramePushed, f, &FramePushed{Frame: s.newFrameID(), Agent: tool.Target, Mode: tool.Mode, Parent: f.ID, ParentCall: c.ID, Input: input})
	return ToolRun{}, false, true
}

// interactiveBusy reports whether an interactive frame other than f and its
// ancestors holds the conversation: only one interactive child is active at
// a time, and later ones wait in call order.
func (s *stepper) interactiveBusy(f *Frame) bool {
	ancestors := map[string]bool{}
	for g := f; g != nil; g = s.st.frame(g.Parent) {
		ancestors[g.ID] = true
		if g.Parent == "" {
			break
		}
	}
	for _, g := range s.st.Frames {
		if g.Mode == ModeInteractive && !ancestors[g.ID] {
			return true
		}
	}
	return false
}

func (s *stepper) startCall(f *Frame, c *Call) ToolRun {
	key := s.st.SessionID + "/" + f.ID + "/" + strconv.FormatInt(c.Origin, 10) + "/" + c.ID
	s.emit(session.EventToolStarted, f, &ToolStarted{CallID: c.ID, Tool: c.Tool, Arguments: json.RawMessage(c.Args), IdempotencyKey: key, Answers: c.Answers})
	return ToolRun{CallID: c.ID, Tool: c.Tool, Args: json.RawMessage(c.Args), IdempotencyKey: key, Answers: c.Answers}
}

// handoff replaces frame f by a frame of the target agent, which keeps the
// conversation, the parent link and the mode. The other calls of the
// message do not run.
func (s *stepper) handoff(f *Frame, h *Call, target string) {
	for _, c := range f.Calls {
		if c.State == CallDone {
			continue
		}
		res := &ToolResult{CallID: c.ID, Tool: c.Tool, Content: fmt.Sprintf("Transferred to %s.", target)}
		if c != h {
			res.Content, res.IsError = fmt.Sprintf("not run: the conversation was handed off to %s", target), true
		}
		s.emit(session.EventToolResult, f, res)
	}
	s.emit(session.EventHandoff, f, &Handoff{From: f.ID, To: s.newFrameID(), Agent: target, CallID: h.ID})
}

// completeResult validates a complete call; a bad one gets an error result.
func (s *stepper) completeResult(f *Frame, c *Call) (string, bool) {
	var args struct {
		Result *string `json:"result"`
	}
	if err := json.Unmarshal([]byte(c.Args), &args); err != nil || args.Result == nil {
		s.emit(session.EventToolResult, f, &ToolResult{CallID: c.ID, Tool: c.Tool, IsError: true,
			Content: `complete needs the arguments {"result": "<what you found or did>"}`})
		return "", false
	}
	return *args.Result, true
}

// derivedID derives a stable id from a call's (or message's) place in the
// session, so parallel calls, nested frames and calls of different turns
// never share one, even when a model reuses call ids.
func derivedID(session, frame string, seq int64, callID, salt string) string {
	h := sha256.Sum256([]byte(session + "\x00" + frame + "\x00" + strconv.FormatInt(seq, 10) + "\x00" + callID + "\x00" + salt))
	return "int_" + hex.EncodeToString(h[:10])
}

func (s *State) findInterrupt(id string) (*Frame, *Call) {
	for _, f := range s.Frames {
		for _, c := range f.Calls {
			if c.State == CallAwaiting && c.Interrupt != nil && c.Interrupt.ID == id {
				return f, c
			}
		}
	}
	return nil, nil
}

func (a *Agent) toolNames(mode string) []string {
	names := make([]string, 0, len(a.Definitions)+1)
	for _, d := range a.Definitions {
		names = append(names, d.Name)
	}
	if mode == ModeInteractive {
		names = append(names, CompleteTool)
	}
	if len(names) == 0 {
		return []string{"(none)"}
	}
	return names
}

func (m *Machine) agentNames() []string {
	names := make([]string, 0, len(m.agents))
	for n := range m.agents {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// decodeArgs decodes tool arguments, which must be one JSON object.
func decodeArgs(raw json.RawMessage) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("expected a JSON object, got %s", jsonKind(v))
	}
	return v, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

func compactJSON(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}
