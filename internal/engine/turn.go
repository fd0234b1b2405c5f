package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn/internal/suggest"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

func projectSessionStarted(p *SessionStarted, st *State, ev *session.Event, frame *Frame) error {
	if st.Seq != 1 {
		return fmt.Errorf("event %d: %s after the start", ev.Seq, ev.Type)
	}
	st.SessionID, st.Nonce, st.Agent, st.Metadata, st.Owner, st.Tenant, st.CreatedAt = p.SessionID, p.Nonce, p.Agent, p.Metadata, p.Owner, p.Tenant, ev.Time
	st.Definition = p.Definition
	st.Status = session.StatusRunning
	st.frames++
	// Room for a turn with one tool call (the request, the call, its
	// result, the answer): the history grows once instead of three times.
	st.Frames = []*Frame{{ID: p.Frame, Agent: p.Agent, Mode: session.ModeMain, Messages: make([]model.Message, 0, 4)}}
	return nil
}

func projectUserMessage(p *UserMessage, st *State, ev *session.Event, frame *Frame) error {
	if frame == nil {
		return noFrame(ev)
	}
	if frame.Parent == "" && len(frame.Messages) == 0 {
		st.Starter = p.Actor
	}
	st.Speaker = p.Actor
	frame.SenderTools = p.Tools
	frame.Messages = append(frame.Messages, model.Message{Role: model.RoleUser, Content: p.Text})
	frame.Iterations, frame.Rejected, frame.Said, frame.SaidSeq = 0, 0, "", 0
	st.Status, st.Output, st.OutputJSON, st.Error = session.StatusRunning, "", nil, nil
	if p.Call != nil {
		// The requested call is the frame's assistant message, as a model's
		// would be: the rest of the engine cannot tell them apart.
		tc := model.ToolCall{ID: p.Call.ID, Name: p.Call.Tool, Arguments: string(p.Call.Arguments)}
		frame.Messages = append(frame.Messages, model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{tc}})
		frame.Calls = []*Call{{ID: tc.ID, Tool: tc.Name, Args: canonicalArgs(tc.Arguments), Origin: ev.Seq, State: CallNew, Caller: true}}
		st.Request = p.Call
	}
	return nil
}

// checkCall checks a direct session's call against its agent: a direct
// agent needs one, any other takes none.
func checkCall(a *Agent, call *session.CallRequest) error {
	switch {
	case a.Direct && call == nil:
		return errorf(session.CodeInvalidRequest, "agent %q has no model: start its sessions with a call (the tool and arguments to approve)", a.Name)
	case !a.Direct && call != nil:
		return errorf(session.CodeInvalidRequest, "agent %q answers messages: a session of it starts with a message, not a call", a.Name)
	case call == nil:
		return nil
	case call.ID == "" || call.Tool == "":
		return errorf(session.CodeInvalidRequest, "a requested call needs an id and a tool name")
	case !isJSONObject(string(call.Arguments)):
		return errorf(session.CodeInvalidArguments, "the arguments of tool %q must be a JSON object", call.Tool)
	}
	return nil
}

func projectTurnPaused(p *TurnPaused, st *State, ev *session.Event, frame *Frame) error {
	st.Status, st.Paused = session.StatusPaused, ev.Seq
	storePreviews(st, p.Interrupts)
	return nil
}

func projectTurnCompleted(p *TurnCompleted, st *State, ev *session.Event, frame *Frame) error {
	st.Status, st.Output, st.OutputJSON = session.StatusCompleted, p.Output, p.OutputJSON
	return nil
}

// projectOutputRejected puts the reason before the model as the user's
// word, so that its next call answers again.
func projectOutputRejected(p *OutputRejected, st *State, ev *session.Event, frame *Frame) error {
	if frame == nil {
		return noFrame(ev)
	}
	frame.Messages = append(frame.Messages, model.Message{Role: model.RoleUser, Content: p.Reason})
	frame.Rejected = p.Attempt
	return nil
}

func projectTurnFailed(p *TurnFailed, st *State, ev *session.Event, frame *Frame) error {
	f := p.Error
	st.Status, st.Error = session.StatusFailed, &f
	return nil
}

func projectTurnInterrupted(p *TurnInterrupted, st *State, ev *session.Event, frame *Frame) error {
	// the state is unchanged: whoever takes over recovers it

	return nil
}

func projectTurnCancelled(p *TurnCancelled, st *State, ev *session.Event, frame *Frame) error {
	st.Status = session.StatusCancelled
	root := st.Root()
	st.Frames = []*Frame{root}
	root.Calls, root.Said, root.SaidSeq, root.Review = nil, "", 0, nil
	return nil
}

func (s *stepper) start(in Start) error {
	if s.st.Seq != 0 {
		return errorf(session.CodeConflict, "session %s already exists", s.st.SessionID)
	}
	if s.m.agents[in.Agent] == nil {
		return errorf(session.CodeUnknownAgent, "unknown agent %q; configured agents: %s%s", in.Agent, strings.Join(s.m.agentNames(), ", "), suggest.Hint(in.Agent, s.m.agentNames()))
	}
	if err := checkCall(s.m.agents[in.Agent], in.Call); err != nil {
		return err
	}
	if err := checkSenderTools(s.m.agents[in.Agent], in.Tools); err != nil {
		return err
	}
	if d := s.m.agents[in.Agent].Definition; in.Definition != "" && in.Definition != d {
		return errorf(session.CodeInvalidRequest, "agent %q: the start asks for definition %s; this machine's is %s", in.Agent, in.Definition, d)
	}
	s.emit(session.EventSessionStarted, nil, &SessionStarted{SessionID: in.SessionID, Nonce: in.Nonce, Agent: in.Agent, Frame: s.newFrameID(), Metadata: in.Metadata, Owner: in.Owner, Tenant: in.Actor.Tenant,
		Definition: s.m.agents[in.Agent].Definition})
	s.emit(session.EventUserMessage, s.st.Root(), &UserMessage{Text: in.Text, Actor: in.Actor, Call: in.Call, Tools: in.Tools})
	s.advance()
	return nil
}

func (s *stepper) message(in Message) error {
	st := s.st
	if in.Seq != 0 && in.Seq != st.Seq {
		return errorf(session.CodeConflict, "stale seq %d: session %s is at seq %d; reload it and retry", in.Seq, st.SessionID, st.Seq)
	}
	if a := s.m.agents[st.Agent]; a != nil && a.Direct {
		return errorf(session.CodeConflict, "session %s makes one requested call (agent %q has no model): it takes no messages", st.SessionID, st.Agent)
	}
	top := st.Top()
	switch st.Status {
	case session.StatusCompleted, session.StatusFailed, session.StatusCancelled:
	case session.StatusPaused:
		for _, in := range st.Interrupts() {
			if in.Kind.Decided() {
				return errorf(session.CodeConflict, "session %s waits for %d decision(s) or answer(s): decide them first (POST …/decisions)", st.SessionID, countDecisions(st))
			}
		}
		if top == nil || top.SaidSeq == 0 {
			return errorf(session.CodeConflict, "session %s is paused but its top frame is not waiting for a message", st.SessionID)
		}
	case session.StatusRunning:
		fallthrough
	default:
		return errorf(session.CodeConflict, "session %s is %s: wait until its turn ends", st.SessionID, st.Status)
	}
	if top != nil {
		if err := checkSenderTools(s.m.agents[top.Agent], in.Tools); err != nil {
			return err
		}
	}
	s.emit(session.EventUserMessage, top, &UserMessage{Text: in.Text, Actor: in.Actor, Tools: in.Tools})
	s.advance()
	return nil
}

// cancelledBy says who cancelled, for the reason the model and the log
// read: "cancelled by the user" when nobody is named (a local caller, or
// the session's owner without a name), else the name and, for someone
// other than a plain user, the role ("cancelled by bob (admin)").
func cancelledBy(a session.Actor) string {
	switch {
	case a.Name == "":
		return "cancelled by the user"
	case a.Role == "" || a.Role == "user":
		return "cancelled by " + a.Name
	}
	return fmt.Sprintf("cancelled by %s (%s)", a.Name, a.Role)
}

func countDecisions(st *State) int {
	n := 0
	for _, in := range st.Interrupts() {
		if in.Kind.Decided() {
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
	if running && in.Scope == session.CancelTop {
		return errorf(session.CodeConflict, "session %s is running: cancel it with scope all, or wait until it pauses", st.SessionID)
	}
	by := cancelledBy(in.Actor)
	switch in.Scope {
	case session.CancelTop:
		top := st.Top()
		if top == nil || top.Mode != session.ModeInteractive {
			return errorf(session.CodeConflict, "session %s has no interactive frame to cancel", st.SessionID)
		}
		s.emit(session.EventFramePopped, top, &FramePopped{Frame: top.ID, Reason: PopCancelled, IsError: true,
			Result: fmt.Sprintf("agent %q was %s", top.Agent, by), Actor: in.Actor})
		s.advance()
	case session.CancelAll:
		root := st.Root()
		for _, c := range root.Calls {
			switch c.State {
			case CallDone:
			case CallStarted: // its runner stopped while it ran
				s.emit(session.EventToolResult, root, &ToolResult{CallID: c.ID, Tool: c.Tool, IsError: true,
					Content: by + " while it was running: it may or may not have taken effect"})
			default:
				s.emit(session.EventToolResult, root, &ToolResult{CallID: c.ID, Tool: c.Tool, IsError: true, Content: by})
			}
		}
		s.emit(session.EventTurnCancelled, root, &TurnCancelled{Reason: by, Actor: in.Actor})
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
		if errors.As(in.Err, &why.Provider) && why.Provider.Code != "" { // the status and request id survive the log
			why.Code = why.Provider.Code // a limit ended it: model_timeout, model_reply_too_large
		}
		s.failFrame(f, why)
		s.advance()
		return nil
	}
	msg := normalizeReply(in.Response.Message)
	msg.Agent = f.Agent
	s.emit(session.EventModelResponse, f, &ModelResponse{Message: msg, Usage: in.Response.Usage})
	if len(msg.ToolCalls) == 0 {
		s.answered(f, msg.Content)
	}
	s.advance()
	return nil
}

// review lets a checked answer go, or pauses it for a person when the
// agent's review policy asks (a policy that fails asks: fail closed).
func (s *stepper) review(a *Agent, f *Frame, text string, value json.RawMessage) {
	if a.Review == nil {
		s.finishFrame(f, text, value)
		return
	}
	ask, err := guarded("the review policy", func() (bool, error) { return a.Review(value) })
	if err == nil && !ask {
		s.finishFrame(f, text, value)
		return
	}
	in := session.Interrupt{ID: derivedID(s.st.scope(), f.ID, s.st.Seq, "", "review"), Kind: session.KindReview,
		Path: s.st.pathTo(f), Output: value, OutputSchema: a.OutputSchema}
	if err != nil {
		in.Message = "the review policy failed, so a person reviews this answer: " + err.Error()
	}
	s.emit(session.EventReviewRequested, f, &ReviewRequested{Interrupt: in, Text: text})
}

// answered ends frame f with its model's final answer, once the answer
// matches the agent's output schema, if it has one: one that does not is
// sent back with why, a bounded number of times, then fails the frame.
func (s *stepper) answered(f *Frame, text string) {
	a := s.m.agents[f.Agent]
	if a == nil || a.OutputSchema == nil {
		s.finishFrame(f, text, nil)
		return
	}
	value, why := a.checkOutput(text)
	if why == "" {
		s.review(a, f, text, value)
		return
	}
	retries := a.OutputRetries
	if retries == 0 {
		retries = DefaultOutputRetries
	}
	if f.Rejected >= retries {
		s.failFrame(f, session.Failure{Code: "invalid_output",
			Message: fmt.Sprintf("agent %q gave no answer matching its output schema in %d attempts; the last: %s", f.Agent, f.Rejected+1, why)})
		return
	}
	s.emit(session.EventOutputRejected, f, &OutputRejected{Attempt: f.Rejected + 1,
		Reason: "Your answer was not accepted: " + why + ". Answer again with only a JSON value matching the output schema."})
}

func (s *stepper) expire() error {
	st := s.st
	if st.Status != session.StatusPaused {
		return errorf(session.CodeConflict, "session %s is %s: nothing to expire", st.SessionID, st.Status)
	}
	// Reminders and escalations first: a step due at the deadline is
	// still told before the outcome.
	fired := s.fireSchedule()
	due := 0
	for _, f := range st.Ordered() {
		for _, c := range f.Calls {
			in := c.Interrupt
			if c.State != CallAwaiting || in == nil || in.ExpiresAt == nil || s.now.Before(*in.ExpiresAt) {
				continue
			}
			due++
			if in.Kind == session.KindExternal {
				s.expireWait(f, c)
				continue
			}
			if s.expireApproval(f, c, in) {
				return nil // the turn failed
			}
		}
	}
	switch {
	case due > 0:
		s.advance()
	case fired == 0:
		return errorf(session.CodeConflict, "session %s has nothing due", st.SessionID)
	}
	return nil
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
			if agent != nil && s.toolOf(agent, f, c.Tool) != nil && s.toolOf(agent, f, c.Tool).Idempotent {
				// Recorded as a decision so the log says why it ran twice.
				s.emit(session.EventDecision, f, &DecisionMade{CallID: c.ID, Kind: session.KindApproval, Tool: c.Tool, Action: session.ActionApprove,
					Reason: "idempotent tool re-run after a crash", Arguments: json.RawMessage(c.Args), Actor: session.Actor{Name: "cairn", Role: "recovery"}})
				continue
			}
			s.inDoubt(f, c, fmt.Sprintf("Cairn stopped while tool %s was running with arguments %s; it may or may not have taken effect. Approve to run it again; reject to tell the model it did not complete; or, if you know how it ended, complete it with its result (or fail it).", c.Tool, c.Args))
		}
	}
	s.advance()
	return nil
}

// inDoubt pauses call c, which may or may not have taken effect, for a
// person to decide whether it runs again.
func (s *stepper) inDoubt(f *Frame, c *Call, message string) {
	st := s.st
	in := session.Interrupt{
		ID: derivedID(st.scope(), f.ID, c.Origin, c.ID, "in_doubt"), Kind: session.KindApproval, InDoubt: true,
		Path: append(st.pathTo(f), session.PathStep{Agent: f.Agent, Tool: c.Tool, CallID: c.ID}),
		Tool: c.Tool, Arguments: json.RawMessage(c.Args), IdempotencyKey: idempotencyKey(st, f, c), Message: message,
	}
	if tool := s.tool(f, c); tool != nil {
		in.ResultSchema = tool.ResultSchema // a completion settles it
	}
	s.emit(session.EventApprovalRequested, f, &InterruptRequested{CallID: c.ID, Interrupt: in})
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
			if s.effects == nil {
				s.effects = s.room.effects[:0]
			}
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
	if due := s.previewsDue(); len(due) > 0 {
		// The person deciding sees what the calls would do: their dry runs
		// first, then the pause that shows them.
		s.effects = append(s.room.effects[:0], RunPreviews{Session: s.st.SessionID, Definition: s.st.Definition, Previews: due})
		return
	}
	ins := s.withPreviews(s.st.Interrupts())
	if len(ins) == 0 {
		// Unreachable by construction; fail loudly rather than hang.
		s.emit(session.EventTurnFailed, s.st.Root(), &TurnFailed{Error: session.Failure{Code: "internal", Message: "engine: the session can neither move nor pause"}})
		return
	}
	s.emit(session.EventTurnPaused, s.st.Root(), &TurnPaused{Interrupts: ins, Created: s.st.createdSincePause()})
}

// maxEventsPerStep bounds the events one input may record.
const maxEventsPerStep = 10000

// pass makes one sweep over the frames. It returns the next effect, or
// whether it recorded anything (the frame tree may have changed: sweep again).
func (s *stepper) pass() (Effect, bool) {
	for _, f := range s.st.Ordered() {
		if f.SaidSeq != 0 || f.Review != nil {
			continue // waits for the user, or for a person's review
		}
		agent := s.m.agents[f.Agent]
		if agent == nil {
			s.failFrame(f, session.Failure{Code: "unknown_agent", Message: fmt.Sprintf("agent %q is no longer configured", f.Agent)})
			return nil, true
		}
		if len(f.Calls) == 0 {
			if agent.Direct {
				// The requested call has its result: it is the answer.
				s.finishFrame(f, f.Messages[len(f.Messages)-1].Content, nil)
				return nil, true
			}
			if agent.MaxIterations > 0 && f.Iterations >= agent.MaxIterations {
				s.failFrame(f, session.Failure{Code: "max_iterations",
					Message: fmt.Sprintf("agent %q stopped after %d iterations without a final answer (max_iterations: %d)", f.Agent, f.Iterations, agent.MaxIterations)})
				return nil, true
			}
			tools := agent.Definitions
			if len(f.SenderTools) > 0 {
				tools = append(tools[:len(tools):len(tools)], f.SenderTools...)
			}
			if f.Mode == session.ModeInteractive {
				tools = append(tools[:len(tools):len(tools)], completeDefinition)
			}
			return CallModel{Frame: f.ID, Agent: f.Agent, Request: &model.Request{
				Agent: f.Agent, System: agent.Instructions, Messages: f.Messages, Tools: tools, OutputSchema: agent.OutputSchema,
			}}, false
		}
		if eff, changed := s.advanceCalls(agent, f); eff != nil || changed {
			return eff, changed
		}
	}
	return nil, false
}
