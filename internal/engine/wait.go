package engine

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/cairnhq/cairn/session"
)

// WaitID is the id of the interrupt a call waits under when its run
// (idempotency key, the waits it ended before, the times a person had it
// run again after it was in doubt) says its work finishes later: known
// before the tool runs, so the tool can be given a callback URL for it.
// Each run has its own: a late result of a run a person gave up on never
// completes the next one.
func WaitID(idempotencyKey string, waits, reruns int) string {
	s := idempotencyKey + "\x00external/" + strconv.Itoa(waits)
	if reruns > 0 {
		s += "/rerun/" + strconv.Itoa(reruns)
	}
	h := sha256.Sum256([]byte(s))
	return "int_" + hex.EncodeToString(h[:10])
}

// findInDoubtWait returns the call in doubt (its process stopped while
// it ran) whose run would have waited under wait id id: a result sent to
// the callback URL that run handed out settles the call, since the URL
// proves that its work started.
func (s *State) findInDoubtWait(id string) (*Frame, *Call) {
	for _, f := range s.Frames {
		for _, c := range f.Calls {
			if c.State == CallAwaiting && c.Interrupt != nil && c.Interrupt.InDoubt && WaitID(idempotencyKey(s, f, c), c.Waits, c.Reruns) == id {
				return f, c
			}
		}
	}
	return nil, nil
}

// waitOnSystem records that call c started work that finishes later: it
// waits under an interrupt of kind external, until its deadline if the
// tool has one.
func (s *stepper) waitOnSystem(f *Frame, c *Call, p Pending) {
	in := session.Interrupt{
		ID: WaitID(idempotencyKey(s.st, f, c), c.Waits, c.Reruns), Kind: session.KindExternal,
		Path: append(s.st.pathTo(f), session.PathStep{Agent: f.Agent, Tool: c.Tool, CallID: c.ID}),
		Tool: c.Tool, Arguments: json.RawMessage(c.Args), Handle: p.Handle, Message: p.Message,
	}
	if tool := s.tool(f, c); tool != nil {
		in.ResultSchema = tool.ResultSchema
		if tool.Wait != nil && tool.Wait.Timeout > 0 {
			exp := s.now.Add(tool.Wait.Timeout).UTC()
			in.ExpiresAt = &exp
		}
		if v, err := decodeArgs(json.RawMessage(c.Args)); err == nil {
			s.schedule(tool, ToolArgs{Raw: json.RawMessage(c.Args), Value: v}, &in)
		}
	}
	s.emit(session.EventExternalRequested, f, &InterruptRequested{CallID: c.ID, Interrupt: in})
}

// tool is the tool of call c in frame f, nil when the agent no longer has it.
func (s *stepper) tool(f *Frame, c *Call) *Tool {
	if a := s.m.agents[f.Agent]; a != nil {
		return s.toolOf(a, f, c.Tool)
	}
	return nil
}

// completion checks a complete or fail decision on a waiting call: a
// completion's output is required, and must match the tool's result
// schema. It returns the output, compacted.
func (s *stepper) completion(i int, d session.Decision, f *Frame, c *Call) (json.RawMessage, error) {
	if d.Action == session.ActionFail {
		if len(d.Output) > 0 {
			return nil, &session.Error{Code: session.CodeInvalidRequest, Interrupt: d.InterruptID,
				Message: fmt.Sprintf("decisions[%d].output: a failure has no output; send the error as reason", i)}
		}
		return nil, nil
	}
	if len(d.Output) == 0 {
		return nil, &session.Error{Code: session.CodeInvalidRequest, Interrupt: d.InterruptID,
			Message: fmt.Sprintf("decisions[%d].output is required: the result of tool %s (a JSON value; a string is the text the model reads)", i, c.Tool)}
	}
	var v any
	err := json.Unmarshal(d.Output, &v)
	if tool := s.tool(f, c); err == nil && tool != nil && tool.CheckResult != nil {
		_, err = guarded("the result validator", func() (struct{}, error) { return struct{}{}, tool.CheckResult(v) })
	}
	if err != nil {
		return nil, &session.Error{Code: session.CodeInvalidOutput, Interrupt: d.InterruptID,
			Message: fmt.Sprintf("decisions[%d].output does not match the result schema of tool %s: %v", i, c.Tool, err)}
	}
	return compactJSON(d.Output), nil
}

// completed is the result the model reads of a completed call: a string
// output is its text, any other value its JSON.
func completed(output json.RawMessage) string {
	var text string
	if json.Unmarshal(output, &text) == nil {
		return text
	}
	return string(output)
}

// failed is the result the model reads of a failed call.
func failed(kind session.Kind, tool, reason string) string {
	if reason == "" {
		reason = "no reason given"
	}
	if kind == session.KindClient {
		return fmt.Sprintf("the client could not run tool %s: %s", tool, reason)
	}
	return fmt.Sprintf("the work tool %s started failed: %s", tool, reason)
}

// expireWait ends external call c, whose deadline passed: the outcome
// its tool names, bounded retries, then an error.
func (s *stepper) expireWait(f *Frame, c *Call) {
	in := c.Interrupt
	// A deadline comes from the tool's Wait; a tool the agent no longer
	// has ends the call with an error.
	outcome, waited := session.OnTimeoutError, ""
	if tool := s.tool(f, c); tool != nil && tool.Wait != nil {
		w := tool.Wait
		waited = " (" + w.Timeout.String() + ")"
		outcome = cmp.Or(w.OnTimeout, session.OnTimeoutError)
		if outcome == session.OnTimeoutRetry && c.Waits >= cmp.Or(w.Retries, DefaultWaitRetries) {
			outcome = session.OnTimeoutError // retries spent
		}
	}
	s.emit(session.EventWaitExpired, f, &WaitExpired{CallID: c.ID, Tool: c.Tool, InterruptID: in.ID, Outcome: outcome, Attempt: c.Waits + 1})
	switch outcome {
	case session.OnTimeoutRetry:
		// The call is approved again: advance starts it, with a new wait id.
	case session.OnTimeoutAsk:
		ask := session.Interrupt{
			ID: derivedID(s.st.scope(), f.ID, c.Origin, c.ID, "retry/"+strconv.Itoa(c.Waits)), Kind: session.KindApproval,
			Path: in.Path, Tool: c.Tool, Arguments: json.RawMessage(c.Args),
			Message: fmt.Sprintf("Tool %s did not finish in time%s. Approve to start it again; reject to give up.", c.Tool, waited),
		}
		s.emit(session.EventApprovalRequested, f, &InterruptRequested{CallID: c.ID, Interrupt: ask})
	case session.OnTimeoutError:
		s.emit(session.EventToolResult, f, &ToolResult{CallID: c.ID, Tool: c.Tool, IsError: true,
			Content: fmt.Sprintf("tool %s did not finish by %s%s; its result never arrived", c.Tool, in.ExpiresAt.UTC().Format(time.RFC3339), waited)})
	}
}

func projectWaitExpired(p *WaitExpired, st *State, ev *session.Event, frame *Frame) error {
	c, err := st.call(ev, frame, p.CallID)
	if err != nil {
		return err
	}
	if c.State != CallAwaiting || c.Interrupt == nil || c.Interrupt.ID != p.InterruptID {
		return fmt.Errorf("event %d: wait %q of call %q expired, but the call does not wait on it", ev.Seq, p.InterruptID, p.CallID)
	}
	c.Interrupt, c.Waits = nil, p.Attempt
	st.Status = session.StatusRunning
	if p.Outcome == session.OnTimeoutRetry {
		c.State = CallApproved
	}
	return nil
}
