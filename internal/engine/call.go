package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn/internal/suggest"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// idempotencyKey is the key of call c: unique in the session, the same
// each time the call runs, and (with the session's nonce) never the key
// of a call of a later session given the same id.
func idempotencyKey(st *State, f *Frame, c *Call) string {
	var origin [20]byte
	o := strconv.AppendInt(origin[:0], c.Origin, 10)
	if st.Nonce == "" {
		return st.SessionID + "/" + f.ID + "/" + string(o) + "/" + c.ID // one allocation: the result
	}
	return st.SessionID + "/" + st.Nonce + "/" + f.ID + "/" + string(o) + "/" + c.ID
}

// told is the result of c as the model sees it: when a person replaced the
// arguments, the result first says so, with both, so that the model's next
// step reasons about what really ran.
func (c *Call) told(result string) string {
	if c.Requested == "" || c.Caller {
		return result
	}
	return fmt.Sprintf("[A person approved this call with other arguments than you asked for. You asked for %s; it ran with %s.]\n%s", c.Requested, c.Args, result)
}

// flushResults moves the results into the history, in the model's call order,
// once every call of the assistant message has one.
func flushResults(f *Frame) {
	for _, c := range f.Calls {
		if c.State != CallDone {
			return
		}
	}
	for _, c := range f.Calls {
		f.Messages = append(f.Messages, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Content: c.Result, IsError: c.IsError})
	}
	f.Calls = nil
}

func (s *State) call(ev *session.Event, f *Frame, callID string) (*Call, error) {
	if f == nil {
		return nil, fmt.Errorf("event %d (%s): unknown frame %q", ev.Seq, ev.Type, ev.Frame)
	}
	if c := f.call(callID); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("event %d (%s): frame %q has no pending call %q", ev.Seq, ev.Type, f.ID, callID)
}

func (f *Frame) call(id string) *Call {
	for _, c := range f.Calls {
		if c.ID == id {
			return c
		}
	}
	return nil
}

func projectModelResponse(p *ModelResponse, st *State, ev *session.Event, frame *Frame) error {
	if frame == nil {
		return noFrame(ev)
	}
	frame.Messages = append(frame.Messages, p.Message)
	frame.Iterations++
	st.Usage.InputTokens += p.Usage.InputTokens
	st.Usage.OutputTokens += p.Usage.OutputTokens
	if id, dup := duplicateCallID(p.Message.ToolCalls); dup {
		return fmt.Errorf("event %d: two tool calls share the id %q (the engine records unique ids)", ev.Seq, id)
	}
	frame.Calls = nil
	for _, tc := range p.Message.ToolCalls {
		// Canonical here too, so a log recorded before replies were
		// normalised replays to what the engine acts on.
		frame.Calls = append(frame.Calls, &Call{ID: tc.ID, Tool: tc.Name, Args: canonicalArgs(tc.Arguments), Origin: ev.Seq, State: CallNew})
	}
	return nil
}

func projectToolStarted(p *ToolStarted, st *State, ev *session.Event, frame *Frame) error {
	c, err := st.call(ev, frame, p.CallID)
	if err != nil {
		return err
	}
	c.State, c.Args = CallStarted, string(p.Arguments)
	c.AskState, c.AskedApproval = nil, false // a question's state came back with its answer
	return nil
}

func projectToolResult(p *ToolResult, st *State, ev *session.Event, frame *Frame) error {
	c, err := st.call(ev, frame, p.CallID)
	if err != nil {
		return err
	}
	c.State, c.Result, c.IsError, c.Interrupt = CallDone, p.Content, p.IsError, nil
	flushResults(frame)
	return nil
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
		switch {
		case r.InDoubt:
			s.inDoubt(f, c, fmt.Sprintf("Tool %s lost the work it held while it waited for an answer (the process stopped); it may or may not have taken effect. Approve to run it again from the start; reject to tell the model it did not complete.", c.Tool))
			continue
		case r.Pending != nil:
			s.waitOnSystem(f, c, *r.Pending)
			continue
		case r.asks():
			path := append(st.pathTo(f), session.PathStep{Agent: f.Agent, Tool: c.Tool, CallID: c.ID})
			in := session.Interrupt{ID: derivedID(st.scope(), f.ID, c.Origin, c.ID, "input/"+strconv.Itoa(len(c.Answers))),
				Kind: session.KindInput, Path: append(path, r.Path...), Tool: c.Tool, Arguments: json.RawMessage(c.Args), Question: r.Question,
				Schema: compactJSON(r.Schema), URL: r.URL, Remote: r.Remote}
			if r.Approval { // what the tool asks approvers to approve
				in.Kind, in.Question, in.Message, in.Schema, in.URL = session.KindApproval, "", r.Question, nil, ""
				s.emit(session.EventApprovalRequested, f, &InterruptRequested{CallID: c.ID, Interrupt: in, Held: r.Held, State: compactJSON(r.State), Asked: true})
				continue
			}
			s.emit(session.EventInputRequested, f, &InterruptRequested{CallID: c.ID, Interrupt: in, Held: r.Held, State: compactJSON(r.State)})
			continue
		}
		s.emit(session.EventToolResult, f, &ToolResult{CallID: c.ID, Tool: c.Tool, Content: c.told(r.Content), IsError: r.IsError})
	}
	s.advance()
	return nil
}

// advanceCalls moves the calls of one frame's assistant message.
func (s *stepper) advanceCalls(agent *Agent, f *Frame) (Effect, bool) {
	// A handoff or complete ends the frame's work on this message, so they
	// are carried out before anything else of it runs. A handoff that needs
	// approval holds the message until it is decided.
	for _, c := range f.Calls {
		if t := s.toolOf(agent, f, c.Tool); t != nil && t.Kind == ToolHandoff {
			switch c.State {
			case CallNew:
				if ok, _ := s.classify(agent, f, c); ok {
					s.handoff(f, c, t.Target)
				}
				return nil, true
			case CallApproved:
				s.handoff(f, c, t.Target)
				return nil, true
			case CallAwaiting:
				return nil, false
			}
			continue
		}
		if c.State != CallNew {
			continue
		}
		if c.Tool == CompleteTool && f.Mode == session.ModeInteractive {
			if result, ok := s.completeResult(f, c); ok {
				s.emit(session.EventFramePopped, f, &FramePopped{Frame: f.ID, Reason: PopCompleted, Result: s.parentCall(f).told(result)})
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
			// Approved arguments were validated when the call was classified
			// or the decision replaced them; a log from elsewhere may hold
			// anything, so they are checked again, without decoding them.
			if !isJSONObject(c.Args) {
				s.emit(session.EventToolResult, f, &ToolResult{CallID: c.ID, Tool: c.Tool, IsError: true,
					Content: fmt.Sprintf("the approved arguments of tool %q are not a JSON object; the call did not run", c.Tool)})
				changed = true
				continue
			}
			if run, started, pushed := s.begin(agent, f, c, nil); started {
				runs = append(runs, run)
			} else if pushed {
				changed = true
			}
		}
	}
	if len(runs) > 0 {
		return RunTools{Session: s.st.SessionID, Nonce: s.st.Nonce, Definition: s.st.Definition, Frame: f.ID, Agent: f.Agent, Calls: runs}, true
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
	tool := s.toolOf(agent, f, c.Tool)
	if tool == nil {
		names := agent.toolNames(f.Mode)
		return fail(fmt.Sprintf("unknown tool %q; available tools: %s%s", c.Tool, strings.Join(names, ", "), suggest.Hint(c.Tool, names)))
	}
	// c.Args is canonical already (see canonicalArgs): the engine only reads it here.
	req := s.st.request(c)
	checked := tool.Validate != nil && tool.Accepts != nil && tool.Accepts(c.Args)
	var v any
	// Decoded when the schema check needs it, or what follows reads it
	// (an approval policy, a request's schema); else only an agent tool
	// reads the arguments, and begin decodes them for it.
	if !checked || tool.NeedsApproval != nil || s.checksRequest(req) {
		var err error
		if v, err = decodeArgs(json.RawMessage(c.Args)); err != nil {
			return fail(fmt.Sprintf("the arguments of tool %q are not valid JSON (%v); send a JSON object matching its schema", c.Tool, err))
		}
	}
	if tool.Validate != nil && !checked {
		if _, err := guarded("the validator", func() (struct{}, error) { return struct{}{}, tool.Validate(v) }); err != nil {
			return fail(fmt.Sprintf("the arguments of tool %q do not match its schema: %v", c.Tool, err))
		}
	}
	if err := s.checkRequested(req, v); err != nil {
		return fail(fmt.Sprintf("the arguments of tool %q do not match the request's schema: %v", c.Tool, err))
	}
	args := ToolArgs{Raw: json.RawMessage(c.Args), Value: v}
	memo := s.st.remembered(f.Agent, c.Tool)
	if memo != nil && memo.Action == session.ActionReject {
		return fail(rejection(memo.Reason) + " (the user refuses this tool for the rest of the session)")
	}
	need, note := false, ""
	if tool.NeedsApproval != nil && memo == nil {
		var err error
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
		s.emit(session.EventDecision, f, &DecisionMade{InterruptID: derivedID(s.st.scope(), f.ID, c.Origin, c.ID, ""), Kind: session.KindApproval,
			CallID: c.ID, Tool: c.Tool, Action: session.ActionApprove, Reason: "auto-approved: the runner approves every call",
			Arguments: json.RawMessage(c.Args), ArgsDigest: digest(c.Args), Actor: session.Actor{Name: "cairn", Role: "auto-approve"}})
		return true, v
	}
	msg := confirmation(tool, c.Tool, args)
	if req != nil && req.Message != "" {
		msg = req.Message
	}
	in := session.Interrupt{
		ID: derivedID(s.st.scope(), f.ID, c.Origin, c.ID, ""), Kind: session.KindApproval,
		Path: append(s.st.pathTo(f), session.PathStep{Agent: f.Agent, Tool: c.Tool, CallID: c.ID}),
		Tool: c.Tool, Arguments: json.RawMessage(c.Args), Message: msg + note,
	}
	if tool.ApprovalTTL > 0 {
		exp := s.now.Add(tool.ApprovalTTL).UTC()
		in.ExpiresAt = &exp
	}
	if req != nil && req.ExpiresAt != nil {
		exp := req.ExpiresAt.UTC()
		in.ExpiresAt = &exp
	}
	if tool.Approvers != nil {
		rules, err := guarded("the approvers rule", func() (*session.Approvers, error) { return tool.Approvers(args) })
		if err != nil {
			return fail(fmt.Sprintf("who may approve tool %q could not be decided (%v); the call did not run", c.Tool, err))
		}
		if rules.Restricts() {
			in.Approvers = rules
			if rules.Count > 1 {
				in.Required = rules.Count
			}
			if rules.NotRequester {
				in.RequestedBy = s.st.requesters()
			}
		}
	}
	if r := s.standingRule(f, c, tool, v, &in); r != nil {
		return s.decideByRule(f, c, &in, r), v
	}
	s.schedule(tool, args, &in)
	s.emit(session.EventApprovalRequested, f, &InterruptRequested{CallID: c.ID, Interrupt: in})
	return false, nil
}

// decideByRule records standing rule r's decision on call c, which would
// have waited on in: for its grantor, naming the rule. It reports whether
// the call may begin (an approval); a rejection records the error result
// the model reads.
func (s *stepper) decideByRule(f *Frame, c *Call, in *session.Interrupt, r *session.Rule) bool {
	why := "standing rule " + r.ID
	if r.Action == session.ActionReject && r.Reason != "" {
		why = r.Reason
	}
	s.emit(session.EventDecision, f, &DecisionMade{InterruptID: in.ID, Kind: session.KindApproval, CallID: c.ID, Tool: c.Tool,
		Action: r.Action, Reason: why, Arguments: json.RawMessage(c.Args), ArgsDigest: digest(c.Args), Actor: r.GrantedBy, Rule: r.ID})
	if r.Action == session.ActionApprove {
		return true
	}
	s.emit(session.EventToolResult, f, &ToolResult{CallID: c.ID, Tool: c.Tool, IsError: true,
		Content: rejection(r.Reason) + " (a standing rule refuses these calls)"})
	return false
}

// request is the caller's request of call c, when the session is a direct
// agent's and c its call.
func (s *State) request(c *Call) *session.CallRequest {
	if s.Request != nil && s.Request.ID == c.ID {
		return s.Request
	}
	return nil
}

// checksRequest reports whether checkRequested has a schema to check.
func (s *stepper) checksRequest(req *session.CallRequest) bool {
	return req != nil && len(req.Schema) > 0 && s.m.opts.CheckAnswer != nil
}

// checkRequested checks arguments against a request's schema.
func (s *stepper) checkRequested(req *session.CallRequest, v any) error {
	if !s.checksRequest(req) {
		return nil
	}
	_, err := guarded("the request's schema", func() (struct{}, error) { return struct{}{}, s.m.opts.CheckAnswer(req.Schema, v) })
	return err
}

// confirmation is the text an approver reads about a call with args: the
// tool's template, or a generic question when it has none or it fails.
func confirmation(tool *Tool, name string, args ToolArgs) string {
	if tool != nil && tool.Confirm != nil {
		if msg, err := guarded("the confirmation template", func() (string, error) { return tool.Confirm(args) }); err == nil {
			return msg
		}
	}
	return fmt.Sprintf("Run tool %s with arguments %s?", name, args.Raw)
}

// begin carries out an approved call: a function tool starts (and must be
// run by the driver); an agent tool pushes a child frame, unless it is
// interactive and another interactive frame holds the conversation, in
// which case it waits its turn. args are the call's arguments decoded, or
// nil when the caller has not decoded them: only an agent tool reads them.
func (s *stepper) begin(agent *Agent, f *Frame, c *Call, args any) (run ToolRun, started, pushed bool) {
	tool := s.toolOf(agent, f, c.Tool)
	if tool == nil { // the agent's tools changed since the call was approved
		s.emit(session.EventToolResult, f, &ToolResult{CallID: c.ID, Tool: c.Tool, IsError: true,
			Content: fmt.Sprintf("tool %q is no longer available; the call did not run", c.Tool)})
		return ToolRun{}, false, true
	}
	if tool.Kind == ToolClient {
		s.emit(session.EventClientRequested, f, &InterruptRequested{CallID: c.ID, Interrupt: session.Interrupt{
			ID: derivedID(s.st.scope(), f.ID, c.Origin, c.ID, "client"), Kind: session.KindClient,
			Path: append(s.st.pathTo(f), session.PathStep{Agent: f.Agent, Tool: c.Tool, CallID: c.ID}),
			Tool: c.Tool, Arguments: json.RawMessage(c.Args), ResultSchema: tool.ResultSchema,
		}})
		return ToolRun{}, false, true
	}
	if tool.Kind != ToolAgent {
		return s.startCall(f, c), true, false
	}
	if tool.Mode == session.ModeInteractive && s.interactiveBusy(f) {
		return ToolRun{}, false, false
	}
	if args == nil {
		args, _ = decodeArgs(json.RawMessage(c.Args)) // checked by the caller
	}
	m, _ := args.(map[string]any)
	input, _ := m["input"].(string)
	s.emit(session.EventFramePushed, f, &FramePushed{Frame: s.newFrameID(), Agent: tool.Target, Mode: tool.Mode, Parent: f.ID, ParentCall: c.ID, Input: input})
	return ToolRun{}, false, true
}

func (s *stepper) startCall(f *Frame, c *Call) ToolRun {
	key := idempotencyKey(s.st, f, c)
	args := json.RawMessage(c.Args) // one copy, for the event and the run
	started := &ToolStarted{CallID: c.ID, Tool: c.Tool, Arguments: args, IdempotencyKey: key, Answers: c.Answers}
	if tool := s.tool(f, c); tool != nil && tool.Wait != nil {
		started.WaitID = WaitID(key, c.Waits, c.Reruns)
	}
	s.emit(session.EventToolStarted, f, started)
	return ToolRun{CallID: c.ID, Tool: c.Tool, Args: args, IdempotencyKey: key, Answers: c.Answers, Waits: c.Waits, Reruns: c.Reruns}
}

// isJSONObject reports whether raw is one valid JSON object, as decodeArgs
// would, without decoding it.
func isJSONObject(raw string) bool {
	t := strings.TrimLeft(raw, " \t\r\n")
	return strings.HasPrefix(t, "{") && json.Valid([]byte(raw))
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

// CallState is where one tool call of an assistant message stands.
type CallState string

// Tool call states, in the order a call moves through them.
const (
	CallNew       CallState = "new"       // received from the model, not yet classified
	CallAwaiting  CallState = "awaiting"  // waits for a person's decision
	CallApproved  CallState = "approved"  // approved (or answered) by a person, not yet started
	CallStarted   CallState = "started"   // tool_started recorded, no result yet
	CallDelegated CallState = "delegated" // a child frame is working on it
	CallDone      CallState = "done"      // a result is recorded
)

// Call is one tool call of the frame's current assistant message.
type Call struct {
	ID   string
	Tool string
	// Args is the argument JSON that will run: the model's, or the approver's replacement.
	// Requested, when an approver replaced them, is what the model asked
	// for: its result then tells the model which arguments ran.
	Args      string
	Requested string
	// Origin is the seq of the model_response event that asked for the call;
	// with the frame id it makes interrupt ids and idempotency keys unique even
	// when a model reuses call ids across turns.
	Origin    int64
	State     CallState
	Interrupt *session.Interrupt // set while awaiting a decision
	// Child is the frame working on a delegated call.
	Child string
	// Answers are the user's answers to the questions the tool asked, in order.
	Answers []session.Answer
	// Held: the tool holds its work in flight while the call waits for an
	// answer (ToolOutcome.Held).
	Held bool
	// AskState is what the tool kept with the question it waits on
	// (ToolOutcome.State), for the answer; AskedApproval: that question is
	// an approval the tool asked for (ToolOutcome.Approval).
	AskState      json.RawMessage `json:",omitempty"`
	AskedApproval bool            `json:",omitempty"`
	Result        string
	IsError       bool
	// Asked is the seq of the event that made the call wait for a person
	// (approval_requested, input_requested), for telling a pause's new
	// interrupts from those an earlier pause already announced.
	Asked int64 `json:",omitempty"`
	// AskedAt is when: the decision records it, for the time a person took.
	AskedAt time.Time `json:",omitzero"`
	// ArgsSeq, while the call waits for several approvals, is the seq since
	// which its arguments are as they are (the request, or the last edit):
	// an approval made at a seq from then on approved these arguments.
	ArgsSeq int64 `json:",omitempty"`
	// Waits counts the waits on a system this call ended by deadline (each
	// retry starts a new one, with a new interrupt id).
	Waits int `json:",omitempty"`
	// Reruns counts the times a person approved running this call again
	// after it was in doubt: each run waits under its own id too.
	Reruns int `json:",omitempty"`
	// Caller: the call is a caller's request (a direct agent's session),
	// not a model's; its result goes back as it is, with no note for a model.
	Caller bool `json:",omitempty"`
}
