package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn/model"
)

// Input is what drives a session forward: one of Start, Message, Decide,
// ModelDone, ToolsDone, Recover.
type Input interface{ isInput() }

// Start opens a new session on an agent with the user's first message.
type Start struct {
	SessionID string
	Agent     string
	Text      string
	Metadata  map[string]any
}

// Message is a new user message after a turn has ended. Seq, when not zero,
// must be the session's current seq.
type Message struct {
	Text string
	Seq  int64
}

// Decide answers some or all pending interrupts. Seq must be the session's
// current seq: two resumes of one pause cannot both win.
type Decide struct {
	Seq       int64
	Decisions []Decision
	Actor     Actor
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

// ToolOutcome is the result of running one tool call.
type ToolOutcome struct {
	CallID  string
	Content string
	IsError bool
}

// Recover continues a session found running after its driver stopped (a
// crash, kill -9). A call that was started and has no result is not re-run
// silently: unless its tool is idempotent, the session pauses with an
// in-doubt approval interrupt for it.
type Recover struct{}

func (Recover) isInput()   {}
func (Start) isInput()     {}
func (Message) isInput()   {}
func (Decide) isInput()    {}
func (ModelDone) isInput() {}
func (ToolsDone) isInput() {}

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
}

func (CallModel) isEffect() {}
func (RunTools) isEffect()  {}

// Step is the outcome of one input: events to append (already applied to the
// state) and effects to perform next.
type Step struct {
	Events  []Event
	Effects []Effect
}

// Machine is the engine for a fixed set of agents. It is safe for concurrent
// use; each State must be used by one goroutine at a time.
type Machine struct {
	agents map[string]*Agent
}

// New returns a machine for agents, keyed by name.
func New(agents map[string]*Agent) *Machine {
	return &Machine{agents: agents}
}

// Agent returns the agent named name, or nil.
func (m *Machine) Agent(name string) *Agent { return m.agents[name] }

// Step applies one input to st at time now. On error st is unchanged and
// nothing is to be recorded.
func (m *Machine) Step(st *State, in Input, now time.Time) (Step, error) {
	s := &stepper{m: m, st: st, now: now}
	var err error
	switch in := in.(type) {
	case Start:
		err = s.start(in)
	case Message:
		err = s.message(in)
	case Decide:
		err = s.decide(in)
	case ModelDone:
		err = s.modelDone(in)
	case ToolsDone:
		err = s.toolsDone(in)
	case Recover:
		err = s.recover()
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
	out     []Event
	effects []Effect
}

// emit records an event and applies it. Payloads are built by the engine from
// validated data, so a marshal or projection failure is a bug, not bad input.
func (s *stepper) emit(typ string, f *Frame, payload any) {
	data, err := json.Marshal(payload)
	if err != nil {
		panic(fmt.Sprintf("engine: marshal %s: %v", typ, err))
	}
	ev := Event{Seq: s.st.Seq + 1, Type: typ, Time: s.now, Data: data}
	if f != nil {
		ev.Frame, ev.Agent = f.ID, f.Agent
	}
	if err := apply(s.st, &ev, payload); err != nil {
		panic(fmt.Sprintf("engine: apply %s: %v", typ, err))
	}
	s.out = append(s.out, ev)
}

func (s *stepper) start(in Start) error {
	if s.st.Seq != 0 {
		return errorf(CodeConflict, "session %s already exists", s.st.SessionID)
	}
	if s.m.agents[in.Agent] == nil {
		return errorf(CodeUnknownAgent, "unknown agent %q; configured agents: %s", in.Agent, strings.Join(s.m.agentNames(), ", "))
	}
	s.emit(EventSessionStarted, nil, &SessionStarted{SessionID: in.SessionID, Agent: in.Agent, Frame: "f1", Metadata: in.Metadata})
	s.emit(EventUserMessage, s.st.Top(), &UserMessage{Text: in.Text})
	s.advance()
	return nil
}

func (s *stepper) message(in Message) error {
	st := s.st
	if in.Seq != 0 && in.Seq != st.Seq {
		return errorf(CodeConflict, "stale seq %d: session %s is at seq %d; reload it and retry", in.Seq, st.SessionID, st.Seq)
	}
	switch st.Status {
	case StatusCompleted, StatusFailed, StatusCancelled:
	case StatusPaused:
		return errorf(CodeConflict, "session %s is paused on %d interrupt(s): decide them first", st.SessionID, len(st.Interrupts()))
	default:
		return errorf(CodeConflict, "session %s is %s: wait until its turn ends", st.SessionID, st.Status)
	}
	s.emit(EventUserMessage, st.Top(), &UserMessage{Text: in.Text})
	s.advance()
	return nil
}

func (s *stepper) decide(in Decide) error {
	st := s.st
	if st.Status != StatusPaused {
		return errorf(CodeConflict, "session %s is %s, not paused", st.SessionID, st.Status)
	}
	if in.Seq != st.Seq {
		return errorf(CodeConflict, "stale seq %d: session %s is at seq %d; reload it and decide again", in.Seq, st.SessionID, st.Seq)
	}
	if len(in.Decisions) == 0 {
		return errorf(CodeInvalidRequest, "decisions: at least one decision is required")
	}
	type decided struct {
		d       Decision
		f       *Frame
		c       *Call
		newArgs json.RawMessage
	}
	plan := make([]decided, 0, len(in.Decisions))
	seen := make(map[string]bool, len(in.Decisions))
	for i, d := range in.Decisions {
		f, c := st.findInterrupt(d.InterruptID)
		if c == nil {
			return &Error{Code: CodeUnknownInterrupt, Message: fmt.Sprintf("decisions[%d]: no pending interrupt %q in session %s", i, d.InterruptID, st.SessionID), Interrupt: d.InterruptID}
		}
		if seen[d.InterruptID] {
			return errorf(CodeInvalidRequest, "decisions[%d]: interrupt %q is decided twice in one request", i, d.InterruptID)
		}
		seen[d.InterruptID] = true
		p := decided{d: d, f: f, c: c}
		switch d.Action {
		case ActionApprove:
			if len(d.Arguments) > 0 && string(d.Arguments) != "null" {
				tool := s.m.agents[f.Agent].Tools[c.Tool]
				v, err := decodeArgs(d.Arguments)
				if err == nil {
					err = tool.Validate(v)
				}
				if err != nil {
					return &Error{Code: CodeInvalidArguments, Message: fmt.Sprintf("decisions[%d].arguments for tool %q: %v", i, c.Tool, err), Interrupt: d.InterruptID}
				}
				p.newArgs = compactJSON(d.Arguments)
			}
		case ActionReject:
		default:
			return errorf(CodeInvalidRequest, "decisions[%d].action: %q is not one of approve, reject", i, d.Action)
		}
		plan = append(plan, p)
	}
	for _, p := range plan {
		s.emit(EventDecision, p.f, &DecisionMade{
			InterruptID: p.d.InterruptID, CallID: p.c.ID, Tool: p.c.Tool, Action: p.d.Action,
			Reason: p.d.Reason, Arguments: json.RawMessage(p.c.Args), NewArgs: p.newArgs, Actor: in.Actor,
		})
		if p.d.Action == ActionReject {
			reason := p.d.Reason
			if reason == "" {
				reason = "no reason given"
			}
			s.emit(EventToolResult, p.f, &ToolResult{CallID: p.c.ID, Tool: p.c.Tool, IsError: true,
				Content: "The user rejected this tool call: " + reason})
		}
	}
	s.advance()
	return nil
}

func (s *stepper) modelDone(in ModelDone) error {
	st := s.st
	f := st.frame(in.Frame)
	if st.Status != StatusRunning || f == nil || len(f.Calls) > 0 {
		return errorf(CodeConflict, "session %s does not expect a model response for frame %q", st.SessionID, in.Frame)
	}
	if in.Err != nil {
		s.emit(EventTurnFailed, f, &TurnFailed{Error: Failure{Code: "model_error",
			Message: fmt.Sprintf("agent %q: model call failed: %v", f.Agent, in.Err)}})
		return nil
	}
	msg := in.Response.Message
	msg.Role = model.RoleAssistant
	s.emit(EventModelResponse, f, &ModelResponse{Message: msg, Usage: in.Response.Usage})
	if len(msg.ToolCalls) == 0 {
		s.emit(EventTurnCompleted, f, &TurnCompleted{Output: msg.Content})
		return nil
	}
	s.advance()
	return nil
}

func (s *stepper) toolsDone(in ToolsDone) error {
	st := s.st
	f := st.frame(in.Frame)
	if f == nil {
		return errorf(CodeConflict, "session %s has no frame %q", st.SessionID, in.Frame)
	}
	for _, r := range in.Results {
		c := f.call(r.CallID)
		if c == nil || c.State != CallStarted {
			return errorf(CodeConflict, "session %s: call %q of frame %q is not running", st.SessionID, r.CallID, in.Frame)
		}
	}
	for _, r := range in.Results {
		c := f.call(r.CallID)
		s.emit(EventToolResult, f, &ToolResult{CallID: c.ID, Tool: c.Tool, Content: r.Content, IsError: r.IsError})
	}
	s.advance()
	return nil
}

func (s *stepper) recover() error {
	st := s.st
	if st.Status != StatusRunning {
		return errorf(CodeConflict, "session %s is %s, not running: nothing to recover", st.SessionID, st.Status)
	}
	f := st.Top()
	agent := s.m.agents[f.Agent]
	var runs []ToolRun
	for _, c := range f.Calls {
		if c.State != CallStarted {
			continue
		}
		if agent != nil && agent.Tools[c.Tool] != nil && agent.Tools[c.Tool].Idempotent {
			runs = append(runs, s.startCall(f, c))
			continue
		}
		in := Interrupt{
			ID: interruptID(st.SessionID, f.ID, c, "in_doubt"), Kind: KindApproval, InDoubt: true,
			Path: []PathStep{{Agent: f.Agent, Tool: c.Tool, CallID: c.ID}},
			Tool: c.Tool, Arguments: json.RawMessage(c.Args),
			Message: fmt.Sprintf("Cairn stopped while tool %s was running with arguments %s; it may or may not have taken effect. Approve to run it again; reject to tell the model it did not complete.", c.Tool, c.Args),
		}
		s.emit(EventApprovalRequested, f, &ApprovalRequested{CallID: c.ID, Interrupt: in})
	}
	if len(runs) > 0 {
		s.effects = append(s.effects, RunTools{Frame: f.ID, Agent: f.Agent, Calls: runs})
		return nil
	}
	s.advance()
	return nil
}

// advance moves the top frame as far as it goes without I/O: it classifies
// new tool calls, starts approved ones, pauses for decisions, or asks for the
// next model call (DESIGN.md §3).
func (s *stepper) advance() {
	st := s.st
	if st.Status != StatusRunning {
		return
	}
	f := st.Top()
	agent := s.m.agents[f.Agent]
	if agent == nil {
		s.emit(EventTurnFailed, f, &TurnFailed{Error: Failure{Code: "unknown_agent",
			Message: fmt.Sprintf("agent %q is no longer configured", f.Agent)}})
		return
	}
	if len(f.Calls) > 0 {
		var runs []ToolRun
		for _, c := range f.Calls {
			switch c.State {
			case CallNew:
				if s.classify(agent, f, c) {
					runs = append(runs, s.startCall(f, c))
				}
			case CallApproved:
				runs = append(runs, s.startCall(f, c))
			}
		}
		if len(runs) > 0 {
			s.effects = append(s.effects, RunTools{Frame: f.ID, Agent: f.Agent, Calls: runs})
			return
		}
		if len(f.Calls) > 0 {
			for _, c := range f.Calls {
				if c.State == CallStarted {
					return // results still to come
				}
			}
			s.emit(EventTurnPaused, f, &TurnPaused{Interrupts: st.Interrupts()})
			return
		}
	}
	if agent.MaxIterations > 0 && f.Iterations >= agent.MaxIterations {
		s.emit(EventTurnFailed, f, &TurnFailed{Error: Failure{Code: "max_iterations",
			Message: fmt.Sprintf("agent %q stopped after %d iterations without a final answer (max_iterations: %d)", f.Agent, f.Iterations, agent.MaxIterations)}})
		return
	}
	s.effects = append(s.effects, CallModel{Frame: f.ID, Agent: f.Agent, Request: &model.Request{
		System: agent.Instructions, Messages: f.Messages, Tools: agent.Definitions,
	}})
}

// classify decides what happens to a call the model just made. It reports
// whether the call may run now; otherwise it has recorded an error result or
// an approval request.
func (s *stepper) classify(agent *Agent, f *Frame, c *Call) bool {
	fail := func(msg string) {
		s.emit(EventToolResult, f, &ToolResult{CallID: c.ID, Tool: c.Tool, Content: msg, IsError: true})
	}
	tool := agent.Tools[c.Tool]
	if tool == nil {
		fail(fmt.Sprintf("unknown tool %q; available tools: %s", c.Tool, strings.Join(agent.toolNames(), ", ")))
		return false
	}
	raw := c.Args
	if strings.TrimSpace(raw) == "" {
		raw = "{}" // some models send "" for a call without arguments
	}
	v, err := decodeArgs(json.RawMessage(raw))
	if err != nil {
		fail(fmt.Sprintf("the arguments of tool %q are not valid JSON (%v); send a JSON object matching its schema", c.Tool, err))
		return false
	}
	if err := tool.Validate(v); err != nil {
		fail(fmt.Sprintf("the arguments of tool %q do not match its schema: %v", c.Tool, err))
		return false
	}
	c.Args = string(compactJSON(json.RawMessage(raw)))
	args := ToolArgs{Raw: json.RawMessage(c.Args), Value: v}
	need := false
	reason := ""
	if tool.NeedsApproval != nil {
		need, err = tool.NeedsApproval(args)
		if err != nil {
			// Fail closed: a policy that cannot be evaluated asks a person.
			need, reason = true, fmt.Sprintf(" (approval policy could not be evaluated: %v)", err)
		}
	}
	if !need {
		return true
	}
	msg := ""
	if tool.Confirm != nil {
		msg, err = tool.Confirm(args)
	}
	if tool.Confirm == nil || err != nil {
		msg = fmt.Sprintf("Run tool %s with arguments %s?", c.Tool, c.Args)
	}
	in := Interrupt{
		ID: interruptID(s.st.SessionID, f.ID, c, ""), Kind: KindApproval,
		Path: []PathStep{{Agent: f.Agent, Tool: c.Tool, CallID: c.ID}},
		Tool: c.Tool, Arguments: json.RawMessage(c.Args), Message: msg + reason,
	}
	s.emit(EventApprovalRequested, f, &ApprovalRequested{CallID: c.ID, Interrupt: in})
	return false
}

func (s *stepper) startCall(f *Frame, c *Call) ToolRun {
	key := s.st.SessionID + "/" + f.ID + "/" + strconv.FormatInt(c.Origin, 10) + "/" + c.ID
	s.emit(EventToolStarted, f, &ToolStarted{CallID: c.ID, Tool: c.Tool, Arguments: json.RawMessage(c.Args), IdempotencyKey: key})
	return ToolRun{CallID: c.ID, Tool: c.Tool, Args: json.RawMessage(c.Args), IdempotencyKey: key}
}

// interruptID derives a stable id from the call's place in the session, so
// parallel calls and calls of different turns never share one.
func interruptID(session, frame string, c *Call, salt string) string {
	h := sha256.Sum256([]byte(session + "\x00" + frame + "\x00" + strconv.FormatInt(c.Origin, 10) + "\x00" + c.ID + "\x00" + salt))
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

func (f *Frame) call(id string) *Call {
	for _, c := range f.Calls {
		if c.ID == id {
			return c
		}
	}
	return nil
}

func (a *Agent) toolNames() []string {
	names := make([]string, 0, len(a.Definitions))
	for _, d := range a.Definitions {
		names = append(names, d.Name)
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
