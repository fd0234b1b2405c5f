package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn/internal/suggest"
	"github.com/cairnhq/cairn/session"
)

// decided is one checked decision, ready to record.
type decided struct {
	d       session.Decision
	f       *Frame
	c       *Call
	newArgs json.RawMessage // compact replacement arguments, if any
	content json.RawMessage // compact answer content, if any
	review  *Frame          // the frame whose answer a review decides
	output  json.RawMessage // compact edited answer, if any
	actor   session.Actor   // who decides, Override set when only an admin's override allows it
	rule    *session.Rule   // the standing rule the decision grants, if any
}

// decide checks every decision of a request before recording any: a
// refused request changes nothing.
func (s *stepper) decide(in Decide) error {
	st := s.st
	s.editPreviews, s.batch = in.Previews, in.Batch
	if st.Status != session.StatusPaused {
		return errorf(session.CodeConflict, "session %s is %s, not paused", st.SessionID, st.Status)
	}
	if in.Seq != st.Seq && !s.stillApproves(in) {
		return errorf(session.CodeConflict, "stale seq %d: session %s is at seq %d; reload it and decide again", in.Seq, st.SessionID, st.Seq)
	}
	if len(in.Decisions) == 0 {
		return errorf(session.CodeInvalidRequest, "decisions: at least one decision is required")
	}
	plan := make([]decided, 0, len(in.Decisions))
	seen := make(map[string]bool, len(in.Decisions))
	for i, d := range in.Decisions {
		if seen[d.InterruptID] {
			return errorf(session.CodeInvalidRequest, "decisions[%d]: interrupt %q is decided twice in one request", i, d.InterruptID)
		}
		seen[d.InterruptID] = true
		p, err := s.check(i, d, in.Actor)
		if err != nil {
			return err
		}
		plan = append(plan, p)
	}
	for i, p := range plan {
		if p.c == nil {
			continue // a review does not expire
		}
		if exp := p.c.Interrupt.ExpiresAt; exp != nil && !s.now.Before(*exp) {
			then := "it counts as rejected"
			if p.c.Interrupt.Kind == session.KindExternal {
				then = "its deadline passed and the tool's on_timeout outcome applies"
			}
			return &session.Error{Code: session.CodeExpired, Interrupt: p.d.InterruptID,
				Message: fmt.Sprintf("decisions[%d]: interrupt %q expired at %s; %s", i, p.d.InterruptID, exp.UTC().Format(time.RFC3339), then)}
		}
	}
	for _, p := range plan {
		s.record(p)
	}
	s.advance()
	return nil
}

// stillApproves reports whether a Decide made at an older seq still
// stands: every decision approves, as it was, a call that needs several
// approvals and whose arguments have not changed since in.Seq. Approvers
// of one call decide independently: another's approval in between does
// not make theirs stale, an edit of the arguments does.
func (s *stepper) stillApproves(in Decide) bool {
	if in.Seq <= 0 || in.Seq > s.st.Seq || len(in.Decisions) == 0 {
		return false
	}
	for _, d := range in.Decisions {
		if d.Action != session.ActionApprove || (len(d.Arguments) > 0 && string(d.Arguments) != "null") {
			return false
		}
		_, c := s.st.findInterrupt(d.InterruptID)
		if c == nil || c.Interrupt.Kind != session.KindApproval || c.Interrupt.Required < 2 || c.ArgsSeq > in.Seq {
			return false
		}
	}
	return true
}

// check validates decision i against the interrupt it names, and that
// actor may make it.
func (s *stepper) check(i int, d session.Decision, actor session.Actor) (decided, error) {
	st := s.st
	if err := s.m.opts.Authority.MaySee(actor, st.SessionID, st.Tenant); err != nil {
		return decided{}, err
	}
	if f := st.findReview(d.InterruptID); f != nil {
		override, err := s.m.opts.Authority.MayDecide(actor, st.Owner, &f.Review.Interrupt, d.Action)
		if err != nil {
			return decided{}, err
		}
		actor.Override = override
		p, err := s.checkReview(i, d, f)
		p.actor = actor
		return p, err
	}
	f, c := st.findInterrupt(d.InterruptID)
	if c == nil && d.Action.Completes() {
		f, c = st.findInDoubtWait(d.InterruptID)
	}
	if c == nil {
		for _, m := range st.Interrupts() {
			if m.ID == d.InterruptID && m.Kind == session.KindMessage {
				return decided{}, &session.Error{Code: session.CodeInvalidRequest, Interrupt: d.InterruptID,
					Message: fmt.Sprintf("decisions[%d]: %q is a message interrupt: reply with POST /v1/sessions/%s/messages", i, d.InterruptID, st.SessionID)}
			}
		}
		return decided{}, &session.Error{Code: session.CodeUnknownInterrupt, Interrupt: d.InterruptID,
			Message: fmt.Sprintf("decisions[%d]: no pending interrupt %q in session %s", i, d.InterruptID, st.SessionID)}
	}
	p := decided{d: d, f: f, c: c}
	// What each kind takes is session's one description of it.
	if takes := c.Interrupt.Actions(); !slices.Contains(takes, d.Action) {
		return decided{}, errorf(session.CodeInvalidRequest, "decisions[%d].action: %q is not a decision on %s %s; use %s%s", i, d.Action, c.Interrupt.Kind.Spec().Label, d.InterruptID, orList(takes), suggest.Hint(string(d.Action), actionNames(takes)))
	}
	// Who may decide it is session's one decision point.
	override, err := s.m.opts.Authority.MayDecide(actor, st.Owner, c.Interrupt, d.Action)
	if err != nil {
		return decided{}, err
	}
	p.actor, p.actor.Override = actor, override
	if d.Remember != "" && (c.Interrupt.Required > 1 || c.Interrupt.Approvers != nil && c.Interrupt.Approvers.NotRequester) {
		return decided{}, &session.Error{Code: session.CodeInvalidRequest, Interrupt: d.InterruptID,
			Message: fmt.Sprintf("decisions[%d].remember: a call that needs several approvers or forbids its requester is decided each time; decide without remember", i)}
	}
	switch d.Action {
	case session.ActionApprove:
		newArgs, err := s.replacementArgs(i, d, f, c)
		if err != nil {
			return decided{}, err
		}
		p.newArgs = newArgs
	case session.ActionAnswer:
		content, err := s.answerContent(i, d, c.Interrupt)
		if err != nil {
			return decided{}, err
		}
		p.content = content
	case session.ActionComplete, session.ActionFail:
		output, err := s.completion(i, d, f, c)
		if err != nil {
			return decided{}, err
		}
		p.output = output
	case session.ActionReject, session.ActionEdit:
	}
	if p.rule, err = s.grant(i, d, f, c, p.actor); err != nil {
		return decided{}, err
	}
	return p, checkRemember(i, d)
}

// checkReview validates decision i on the answer frame f waits to have
// reviewed: approve, reject, or edit with an answer the agent's output
// schema takes.
func (s *stepper) checkReview(i int, d session.Decision, f *Frame) (decided, error) {
	p := decided{d: d, review: f}
	if d.Remember != "" {
		return decided{}, errorf(session.CodeInvalidRequest, "decisions[%d].remember: a review cannot be remembered", i)
	}
	if d.Rule != nil {
		return decided{}, errorf(session.CodeInvalidRequest, "decisions[%d].rule: a review's decision grants no standing rule", i)
	}
	switch d.Action {
	case session.ActionApprove, session.ActionReject:
		return p, nil
	case session.ActionEdit:
		if len(d.Output) == 0 || string(d.Output) == "null" {
			return decided{}, &session.Error{Code: session.CodeInvalidRequest, Interrupt: d.InterruptID,
				Message: fmt.Sprintf("decisions[%d].output is required: the answer that replaces the reviewed one, matching interrupt.output_schema", i)}
		}
		v, err := decodeArgs(d.Output)
		if a := s.m.agents[f.Agent]; err == nil && a != nil && a.CheckOutput != nil {
			_, err = guarded("the output validator", func() (struct{}, error) { return struct{}{}, a.CheckOutput(v) })
		}
		if err != nil {
			return decided{}, &session.Error{Code: session.CodeInvalidOutput, Interrupt: d.InterruptID,
				Message: fmt.Sprintf("decisions[%d].output does not match the output schema: %v", i, err)}
		}
		p.output = compactJSON(d.Output)
		return p, nil
	case session.ActionAnswer, session.ActionComplete, session.ActionFail:
	}
	return decided{}, errorf(session.CodeInvalidRequest, "decisions[%d].action: %q does not decide a review; use approve, edit (with output) or reject (with a reason)", i, d.Action)
}

// answerContent checks an answer against its question: a question with a
// schema takes content valid under it, a URL question takes anything, and a
// plain question takes text. It returns the content, compacted.
func (s *stepper) answerContent(i int, d session.Decision, in *session.Interrupt) (json.RawMessage, error) {
	hasContent := len(d.Content) > 0 && string(d.Content) != "null"
	switch {
	case len(in.Schema) > 0:
		if !hasContent {
			return nil, &session.Error{Code: session.CodeInvalidRequest, Interrupt: d.InterruptID,
				Message: fmt.Sprintf("decisions[%d].content is required: this question asks for an object under the interrupt's schema (or reject it, with a reason)", i)}
		}
		v, err := decodeArgs(d.Content)
		if err == nil && s.m.opts.CheckAnswer != nil {
			_, err = guarded("the answer validator", func() (struct{}, error) { return struct{}{}, s.m.opts.CheckAnswer(in.Schema, v) })
		}
		if err != nil {
			return nil, &session.Error{Code: session.CodeInvalidArguments, Interrupt: d.InterruptID,
				Message: fmt.Sprintf("decisions[%d].content does not match the question's schema: %v", i, err)}
		}
		return compactJSON(d.Content), nil
	case hasContent:
		return nil, &session.Error{Code: session.CodeInvalidRequest, Interrupt: d.InterruptID,
			Message: fmt.Sprintf("decisions[%d].content: this question has no schema; answer with text", i)}
	case in.URL == "" && d.Text == "":
		return nil, errorf(session.CodeInvalidRequest, "decisions[%d].text is required: the answer to the question (or reject it, with a reason)", i)
	}
	return nil, nil
}

// replacementArgs validates an approval's new arguments against the tool's
// schema; nil when the call keeps its own.
func (s *stepper) replacementArgs(i int, d session.Decision, f *Frame, c *Call) (json.RawMessage, error) {
	if len(d.Arguments) == 0 || string(d.Arguments) == "null" {
		return nil, nil
	}
	var tool *Tool
	if a := s.m.agents[f.Agent]; a != nil {
		tool = s.toolOf(a, f, c.Tool)
	}
	v, err := decodeArgs(d.Arguments)
	if err == nil && tool != nil && tool.Validate != nil {
		_, err = guarded("the validator", func() (struct{}, error) { return struct{}{}, tool.Validate(v) })
	}
	if err == nil {
		err = s.checkRequested(s.st.request(c), v)
	}
	if err != nil {
		return nil, &session.Error{Code: session.CodeInvalidArguments, Interrupt: d.InterruptID,
			Message: fmt.Sprintf("decisions[%d].arguments for tool %q: %v", i, c.Tool, err)}
	}
	return compactJSON(d.Arguments), nil
}

// actionNames are actions as words.
func actionNames(actions []session.Action) []string {
	var out []string
	for _, a := range actions {
		out = append(out, string(a))
	}
	return out
}

// orList names actions for a message: "complete or fail".
func orList(actions []session.Action) string {
	names := actionNames(actions)
	switch len(names) {
	case 0:
		return "no decision"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func checkRemember(i int, d session.Decision) error {
	switch d.Remember {
	case "":
		return nil
	case session.RememberSession:
		if d.Action != session.ActionApprove && d.Action != session.ActionReject {
			return errorf(session.CodeInvalidRequest, "decisions[%d].remember: only an approval or a rejection can be remembered", i)
		}
		return nil
	}
	return errorf(session.CodeInvalidRequest, "decisions[%d].remember: %q is not \"session\"", i, d.Remember)
}

// remember records r for the rest of the session, replacing an earlier
// decision on the same tool.
func (s *State) remember(r session.Remembered) {
	if old := s.remembered(r.Agent, r.Tool); old != nil {
		*old = r
		return
	}
	s.Remembered = append(s.Remembered, r)
}

// rejection is the result the model sees for a rejected call.
func rejection(reason string) string {
	if reason == "" {
		reason = "no reason given"
	}
	return "The user rejected this tool call: " + reason
}

// record emits a checked decision, and for a rejection the error result the
// model sees. An approval that is not the last one a call needs is recorded
// as such, and the call waits on.
func (s *stepper) record(p decided) {
	actor := p.actor
	if p.review != nil {
		s.recordReview(p, actor)
		return
	}
	var approvals []session.Approval
	// The program that holds the runner (a trusted actor) decides outright;
	// people count one approval each.
	if in := p.c.Interrupt; p.d.Action == session.ActionApprove && in.Required > 1 && !actor.Trusted() {
		if p.newArgs == nil {
			approvals = append(slices.Clip(in.Approvals), session.Approval{Actor: actor, At: s.now.UTC()})
		} else {
			approvals = []session.Approval{{Actor: actor, At: s.now.UTC()}}
		}
		if len(approvals) < in.Required {
			added := &ApprovalAdded{InterruptID: p.d.InterruptID, CallID: p.c.ID, Tool: p.c.Tool, Count: len(approvals), Required: in.Required,
				NewArgs: p.newArgs, ArgsDigest: digest(p.c.Args), Actor: actor, Batch: s.batch}
			if p.newArgs != nil {
				added.NewArgsDigest = digest(string(p.newArgs))
				var tool *Tool
				if a := s.m.agents[p.f.Agent]; a != nil {
					tool = s.toolOf(a, p.f, p.c.Tool)
				}
				v, _ := decodeArgs(p.newArgs) // checked when the decision was
				added.Message = confirmation(tool, p.c.Tool, ToolArgs{Raw: p.newArgs, Value: v})
				if tool != nil && tool.Preview {
					pv, ok := s.editPreviews[p.d.InterruptID]
					if !ok {
						pv = session.Preview{Error: "no preview was computed for the edited arguments"}
					}
					pv = pv.Normalize()
					added.Preview = &pv
				}
			}
			s.emit(session.EventApprovalAdded, p.f, added)
			return
		}
	}
	ev := &DecisionMade{
		InterruptID: p.d.InterruptID, Kind: p.c.Interrupt.Kind, CallID: p.c.ID, Tool: p.c.Tool, Action: p.d.Action,
		Reason: p.d.Reason, Text: p.d.Text, Arguments: json.RawMessage(p.c.Args), ArgsDigest: digest(p.c.Args),
		NewArgs: p.newArgs, Remember: p.d.Remember, Actor: actor, Content: p.content, Output: p.output, Approvals: approvals,
		Batch: s.batch, Granted: p.rule,
	}
	if p.newArgs != nil {
		ev.NewArgsDigest = digest(string(p.newArgs))
	}
	if !p.c.AskedAt.IsZero() {
		at := p.c.AskedAt.UTC()
		ev.AskedAt = &at
	}
	s.emit(session.EventDecision, p.f, ev)
	switch p.d.Action {
	case session.ActionComplete:
		s.emit(session.EventToolResult, p.f, &ToolResult{CallID: p.c.ID, Tool: p.c.Tool, Content: p.c.told(completed(p.output))})
		return
	case session.ActionFail:
		s.emit(session.EventToolResult, p.f, &ToolResult{CallID: p.c.ID, Tool: p.c.Tool, IsError: true, Content: failed(ev.Kind, p.c.Tool, p.d.Reason)})
		return
	case session.ActionApprove, session.ActionReject, session.ActionAnswer, session.ActionEdit:
	}
	if p.d.Action == session.ActionReject && !(p.c.Held && (ev.Kind == session.KindInput || p.c.AskedApproval)) {
		s.emit(session.EventToolResult, p.f, &ToolResult{CallID: p.c.ID, Tool: p.c.Tool, IsError: true,
			Content: rejection(p.d.Reason)})
	}
}

// recordReview emits a review's decision and what follows: the answer
// goes (as it was, or as edited), or goes back to the model with the
// reviewer's reason.
func (s *stepper) recordReview(p decided, actor session.Actor) {
	f := p.review
	rv := *f.Review
	s.emit(session.EventDecision, f, &DecisionMade{InterruptID: p.d.InterruptID, Kind: session.KindReview, Action: p.d.Action,
		Reason: p.d.Reason, Output: p.output, Actor: actor, Batch: s.batch})
	switch p.d.Action {
	case session.ActionApprove:
		s.finishFrame(f, rv.Text, rv.Value)
	case session.ActionEdit:
		s.finishFrame(f, string(p.output), p.output)
	case session.ActionReject:
		reason := p.d.Reason
		if reason == "" {
			reason = "no reason given"
		}
		s.emit(session.EventOutputRejected, f, &OutputRejected{Attempt: f.Rejected,
			Reason: "A person reviewed your answer and sent it back: " + reason + ". Answer again."})
	case session.ActionAnswer, session.ActionComplete, session.ActionFail: // refused by checkReview
	}
}

func projectDecisionMade(p *DecisionMade, st *State, ev *session.Event, frame *Frame) error {
	if p.Kind == session.KindReview {
		if frame == nil || frame.Review == nil || frame.Review.Interrupt.ID != p.InterruptID {
			return fmt.Errorf("event %d: a review decision for %q, which no frame waits on", ev.Seq, p.InterruptID)
		}
		frame.Review, st.Status = nil, session.StatusRunning
		return nil
	}
	c, err := st.call(ev, frame, p.CallID)
	if err != nil {
		return err
	}
	inDoubt := c.Interrupt != nil && c.Interrupt.InDoubt
	c.Interrupt = nil
	st.Status = session.StatusRunning
	switch p.Action {
	case session.ActionApprove:
		c.State = CallApproved
		if c.AskedApproval { // the tool asked: it runs again, told it was approved
			c.Answers = append(c.Answers, session.Answer{Approved: true, State: c.AskState})
			break
		}
		if inDoubt {
			c.Reruns++  // the run in doubt may yet call back: this one waits under another id
			if c.Held { // the held work is gone: the call starts afresh
				c.Answers, c.Held = nil, false
			}
		}
		if len(p.NewArgs) > 0 {
			if c.Requested == "" { // an approval before this one may have edited them already
				c.Requested = string(p.Arguments) // the model asked for these; it is told
			}
			c.Args = string(p.NewArgs)
		}
	case session.ActionAnswer:
		c.State = CallApproved
		c.Answers = append(c.Answers, session.Answer{Text: p.Text, Content: p.Content, State: c.AskState})
	case session.ActionReject:
		if c.Held && (p.Kind == session.KindInput || c.AskedApproval) { // the held work hears "declined"
			c.State = CallApproved
			c.Answers = append(c.Answers, session.Answer{Declined: true, Reason: p.Reason, State: c.AskState})
		}
	case session.ActionEdit: // a review's, handled above: a call is not edited
	case session.ActionComplete, session.ActionFail: // the tool_result follows
	}
	if p.Remember == session.RememberSession {
		st.remember(session.Remembered{Agent: frame.Agent, Tool: c.Tool, Action: p.Action, Reason: p.Reason})
	}
	// A rejection is followed by the tool_result the model sees.
	return nil
}

// projectApprovalAdded counts one approval of a call that needs several;
// an edit of its arguments replaces them and starts the count over.
func projectApprovalAdded(p *ApprovalAdded, st *State, ev *session.Event, frame *Frame) error {
	c, err := st.call(ev, frame, p.CallID)
	if err != nil {
		return err
	}
	if c.State != CallAwaiting || c.Interrupt == nil || c.Interrupt.ID != p.InterruptID {
		return fmt.Errorf("event %d: an approval of %q, which call %q does not wait on", ev.Seq, p.InterruptID, p.CallID)
	}
	in := *c.Interrupt // a copy: the earlier one may be shared with a copy of the state
	approval := session.Approval{Actor: p.Actor, At: ev.Time.UTC()}
	if len(p.NewArgs) > 0 {
		if c.Requested == "" {
			c.Requested = c.Args // the model asked for these; it is told
		}
		c.Args, c.ArgsSeq = string(p.NewArgs), ev.Seq
		in.Arguments, in.Approvals = p.NewArgs, []session.Approval{approval}
		in.Preview = p.Preview // of the new arguments (nil: their tool has none)
		if p.Message != "" {
			in.Message = p.Message // the approvers after the edit read about these arguments
		}
	} else {
		in.Approvals = append(slices.Clip(in.Approvals), approval)
	}
	c.Interrupt = &in
	return nil
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
