package engine

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/cairnhq/cairn/session"
)

// Previews: a tool with a dry run (Tool.Preview) has it computed before the
// session pauses on its approval, so the person deciding sees what the call
// would do. The engine asks for them with a RunPreviews effect when it is
// about to pause; PreviewsDone brings them back, and the pause records them
// with its interrupts (turn_paused), whose projection stores each with its
// call's interrupt. Nothing else changes: a crash before the pause is
// recorded computes them again (they are free of side effects), and a
// restart reads them from the log.

// RunPreviews asks the driver to compute the previews of approvals about
// to be asked for, and report PreviewsDone (in any order). A preview that
// fails is reported as its error: it never blocks the pause.
type RunPreviews struct {
	// Session is the id of the session whose calls these are, and
	// Definition the definition it runs under (State.Definition): the
	// tools whose previews run.
	Session, Definition string
	Previews            []PreviewRun
}

// PreviewRun is one approval whose tool's dry run is to be computed.
type PreviewRun struct {
	InterruptID string
	Frame       string
	Agent       string
	Tool        string
	Args        json.RawMessage
}

// PreviewsDone reports the outcome of a RunPreviews effect.
type PreviewsDone struct {
	Results []PreviewOutcome
}

// PreviewOutcome is one approval's preview (its dry run's output, or why
// there is none).
type PreviewOutcome struct {
	InterruptID string
	Preview     session.Preview
}

func (RunPreviews) isEffect() {}
func (PreviewsDone) isInput() {}

// previewsDue returns the dry runs to compute before the session pauses:
// an approval's (not an in-doubt call's) whose tool has one and whose
// interrupt has none yet. Nil when there are none.
func (s *stepper) previewsDue() []PreviewRun {
	var out []PreviewRun
	for _, f := range s.st.Ordered() {
		agent := s.m.agents[f.Agent]
		if agent == nil {
			continue
		}
		for _, c := range f.Calls {
			in := c.Interrupt
			if c.State != CallAwaiting || in == nil || in.Kind != session.KindApproval || in.InDoubt || in.Preview != nil {
				continue
			}
			if _, done := s.previews[in.ID]; done {
				continue
			}
			if t := s.toolOf(agent, f, c.Tool); t != nil && t.Preview {
				out = append(out, PreviewRun{InterruptID: in.ID, Frame: f.ID, Agent: f.Agent, Tool: c.Tool, Args: json.RawMessage(c.Args)})
			}
		}
	}
	return out
}

// previewsDone takes the previews of a RunPreviews effect and goes on to
// the pause they were computed for.
func (s *stepper) previewsDone(in PreviewsDone) error {
	st := s.st
	if st.Status != session.StatusRunning {
		return errorf(session.CodeConflict, "session %s is %s: no previews are due", st.SessionID, st.Status)
	}
	due := map[string]bool{}
	for _, run := range s.previewsDue() {
		due[run.InterruptID] = true
	}
	s.previews = make(map[string]session.Preview, len(in.Results))
	for _, r := range in.Results {
		if !due[r.InterruptID] {
			return errorf(session.CodeConflict, "session %s: interrupt %q has no preview due", st.SessionID, r.InterruptID)
		}
		delete(due, r.InterruptID)
		s.previews[r.InterruptID] = r.Preview.Normalize()
	}
	for id := range due {
		// A driver that lost one reports it as missing rather than asking again.
		s.previews[id] = session.Preview{Error: "the preview was not computed"}
	}
	s.advance()
	return nil
}

// withPreviews returns ins with the previews this step computed, each on
// its interrupt (copied: ins are the state's).
func (s *stepper) withPreviews(ins []session.Interrupt) []session.Interrupt {
	if len(s.previews) == 0 {
		return ins
	}
	for i := range ins {
		if p, ok := s.previews[ins[i].ID]; ok && ins[i].Preview == nil {
			ins[i].Preview = &p
		}
	}
	return ins
}

// storePreviews stores the previews a pause recorded with their calls'
// interrupts, which are shared with copies of the state: each changed one
// is replaced, not written to.
func storePreviews(st *State, paused []session.Interrupt) {
	for _, p := range paused {
		if p.Preview == nil || p.Kind != session.KindApproval {
			continue
		}
		for _, f := range st.Ordered() {
			for _, c := range f.Calls {
				if c.Interrupt != nil && c.Interrupt.ID == p.ID && c.Interrupt.Preview == nil {
					in := *c.Interrupt
					in.Preview = p.Preview
					c.Interrupt = &in
				}
			}
		}
	}
}

// PreviewFor checks arguments a pending approval could be approved with,
// exactly as a decision's (the tool's schema, the request's), and by
// whom (the actor must be one who may approve it), and returns the dry
// run to compute for them: a person sees what an edit would do before
// deciding. Nothing is recorded; st is not changed. Nil or null args
// preview the call's own arguments.
func (m *Machine) PreviewFor(st *State, interruptID string, args json.RawMessage, actor session.Actor) (PreviewRun, error) {
	s := &stepper{m: m, st: st}
	f, c := st.findInterrupt(interruptID)
	if f == nil || st.Status != session.StatusPaused {
		return PreviewRun{}, &session.Error{Code: session.CodeUnknownInterrupt, Interrupt: interruptID,
			Message: "no pending interrupt " + interruptID + " in session " + st.SessionID}
	}
	if c.Interrupt.Kind != session.KindApproval || c.Interrupt.InDoubt {
		return PreviewRun{}, errorf(session.CodeInvalidRequest, "interrupt %s is not an approval of a call about to run: only those have previews", interruptID)
	}
	var tool *Tool
	if a := m.agents[f.Agent]; a != nil {
		tool = s.toolOf(a, f, c.Tool)
	}
	if tool == nil || !tool.Preview {
		return PreviewRun{}, errorf(session.CodeInvalidRequest, "tool %q has no preview (declare one: a tool's \"preview:\" in the configuration, or Tool.Preview)", c.Tool)
	}
	if _, err := m.opts.Authority.MayDecide(actor, st.Owner, c.Interrupt, session.ActionApprove); err != nil {
		return PreviewRun{}, err
	}
	newArgs, err := s.replacementArgs(0, session.Decision{InterruptID: interruptID, Arguments: args}, f, c)
	if err != nil {
		var e *session.Error
		if errors.As(err, &e) {
			e.Message = strings.TrimPrefix(e.Message, "decisions[0].")
		}
		return PreviewRun{}, err
	}
	if newArgs == nil {
		newArgs = json.RawMessage(c.Args)
	}
	return PreviewRun{InterruptID: interruptID, Frame: f.ID, Agent: f.Agent, Tool: c.Tool, Args: newArgs}, nil
}

// EditPreviews names the dry runs a driver computes before it applies in:
// those of edited arguments on calls that will wait for more approvers
// (an approval by a person of a call that needs several, with new
// arguments: its approval_added records the preview, since the session
// stays paused). Decisions the step would refuse are left out; it refuses
// them.
func (m *Machine) EditPreviews(st *State, in Decide) []PreviewRun {
	if st.Status != session.StatusPaused || in.Actor.Trusted() {
		return nil
	}
	var out []PreviewRun
	for _, d := range in.Decisions {
		if d.Action != session.ActionApprove || len(d.Arguments) == 0 || string(d.Arguments) == "null" {
			continue
		}
		if _, c := st.findInterrupt(d.InterruptID); c == nil || c.Interrupt.Required < 2 {
			continue
		}
		if run, err := m.PreviewFor(st, d.InterruptID, d.Arguments, in.Actor); err == nil {
			out = append(out, run)
		}
	}
	return out
}
