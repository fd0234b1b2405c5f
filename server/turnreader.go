package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/session"
)

// The protocol adapters (the AI SDK's chat, AG-UI) show a turn the same
// way: the text of the agents the user talks with (the root agent, an
// interactive sub-agent, a handoff target), their tool calls and results,
// and the calls, at any depth, that wait for a person. A sub-agent run as a
// tool works inside; its calls appear (as frame:callId, since model call
// ids repeat across agents) only when they need a person.

// turnSink is what an adapter does with a turn, in order.
type turnSink interface {
	// textDelta is the assistant's text, streamed or whole.
	textDelta(delta string)
	// modelDone ends a model call of the conversation: its text is
	// complete, and these calls start.
	modelDone(calls []shownCall)
	// approval: a call waits for a person; known says the front end was
	// shown the call already.
	approval(callID string, in cairn.Interrupt, known bool)
	// result is a shown call's result; denied: a person rejected it.
	result(callID, content string, isError, denied bool)
}

// shownCall is a tool call as a front end sees it.
type shownCall struct {
	ID, Name string
	Args     json.RawMessage
}

// waitingApproval is an approval asked for and not shown yet.
type waitingApproval struct {
	callID string
	in     cairn.Interrupt
	known  bool
}

// turnReader reads a session's events and calls its sink.
type turnReader struct {
	mu       sync.Mutex
	sink     turnSink
	internal map[string]bool   // frames of sub-agents run as tools
	shown    map[string]bool   // calls the front end knows
	asked    map[string]string // interrupt id → call id, of approvals and questions
	denied   map[string]bool
	decided  map[string]bool // interrupts a decision of the learnt log answered
	// waiting are the approvals asked for since the last pause, shown
	// when the session pauses: its turn_paused has them with their
	// previews, computed after they were asked for.
	waiting []waitingApproval
	// streamed is the text the open model call streamed. Deltas are a
	// beginning of the reply (a stream that skips some skips the rest, with
	// a model_deltas_skipped marker): its model_response adds what is left.
	streamed strings.Builder
}

func newTurnReader(sink turnSink) *turnReader {
	return &turnReader{sink: sink, internal: map[string]bool{}, shown: map[string]bool{}, asked: map[string]string{}, denied: map[string]bool{}, decided: map[string]bool{}}
}

func (t *turnReader) lock()   { t.mu.Lock() }
func (t *turnReader) unlock() { t.mu.Unlock() }

// learn reads an earlier part of the log: which frames are internal,
// which call each approval or question is about, and which interrupts were
// decided, for a turn that goes on from there.
func (t *turnReader) learn(evs []cairn.Event) {
	for _, ev := range evs {
		p, err := session.DecodeEvent(ev)
		if err != nil {
			continue
		}
		switch d := p.(type) {
		case *session.FramePushed:
			t.noteFrame(d)
		case *session.InterruptRequested:
			t.asked[d.Interrupt.ID] = t.callID(ev.Frame, d.CallID)
		case *session.DecisionMade:
			if d.InterruptID != "" {
				t.decided[d.InterruptID] = true
			}
		}
	}
}

// answering marks the calls these decisions answer as shown: their
// results continue what the front end shows.
func (t *turnReader) answering(ds []cairn.Decision) {
	for _, d := range ds {
		if id, ok := t.asked[d.InterruptID]; ok {
			t.shown[id] = true
		}
	}
}

// noteFrame records a frame of an agent used as a tool: its calls are
// internal to the call that started it.
func (t *turnReader) noteFrame(d *session.FramePushed) {
	if d.Mode == session.ModeTool {
		t.internal[d.Frame] = true
	}
}

// callID names a call for the front end.
func (t *turnReader) callID(frame, callID string) string {
	if !t.internal[frame] {
		return callID
	}
	return frame + ":" + callID
}

// observe reads one event as it is recorded (TurnOptions.Observe).
func (t *turnReader) observe(ev cairn.Event) {
	p, err := session.DecodeEvent(ev)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	talking := !t.internal[ev.Frame]
	switch d := p.(type) {
	case *session.FramePushed:
		t.noteFrame(d)
	case *session.ModelDelta:
		if talking && d.Text != "" {
			t.streamed.WriteString(d.Text)
			t.sink.textDelta(d.Text)
		}
	case *session.ModelResponse:
		if !talking {
			return
		}
		// The text the deltas did not carry; none when they do not begin
		// it (a provider that rewrites its text at the end keeps what it
		// streamed).
		if rest, ok := strings.CutPrefix(d.Message.Content, t.streamed.String()); ok && rest != "" {
			t.sink.textDelta(rest)
		}
		t.streamed.Reset()
		calls := make([]shownCall, 0, len(d.Message.ToolCalls))
		for _, c := range d.Message.ToolCalls {
			id := t.callID(ev.Frame, c.ID)
			t.shown[id] = true
			calls = append(calls, shownCall{ID: id, Name: c.Name, Args: json.RawMessage(c.Arguments)})
		}
		t.sink.modelDone(calls)
	case *session.InterruptRequested:
		id := t.callID(ev.Frame, d.CallID)
		t.asked[d.Interrupt.ID] = id
		if ev.Type != session.EventApprovalRequested {
			return
		}
		known := t.shown[id]
		t.shown[id] = true
		t.waiting = append(t.waiting, waitingApproval{id, d.Interrupt, known})
	case *session.TurnPaused:
		for _, w := range t.waiting {
			in := w.in
			for _, paused := range d.Interrupts {
				if paused.ID == in.ID {
					in = paused // with its preview
				}
			}
			t.sink.approval(w.callID, in, w.known)
		}
		t.waiting = nil
	case *session.ReviewRequested:
		if !talking {
			return
		}
		// A review shows as a call of reviewTool whose input is the
		// proposed answer, waiting for approval.
		id := reviewCallID(d.Interrupt.ID)
		t.asked[d.Interrupt.ID], t.shown[id] = id, true
		in := d.Interrupt
		in.Tool, in.Arguments = reviewTool, in.Output
		t.sink.approval(id, in, false)
	case *session.DecisionMade:
		if d.Kind == cairn.KindReview {
			// The review's call ends with the decision: the answer that
			// went, or a denial (the model answers again).
			if id := reviewCallID(d.InterruptID); t.shown[id] {
				out := "approved"
				if d.Action == cairn.ActionEdit {
					out = "edited: " + string(d.Output)
				}
				t.sink.result(id, out, false, d.Action == cairn.ActionReject)
			}
			return
		}
		if d.Action == cairn.ActionReject {
			t.denied[t.callID(ev.Frame, d.CallID)] = true
		}
	case *session.ToolResult:
		if id := t.callID(ev.Frame, d.CallID); t.shown[id] {
			t.sink.result(id, d.Content, d.IsError, t.denied[id])
		}
	}
}

// reviewTool is the name a review's call has in front ends that show
// interrupts as tool calls (the AI SDK's and AG-UI's).
const reviewTool = "review_answer"

// reviewCallID is the call id a review shows under.
func reviewCallID(interrupt string) string { return "review:" + interrupt }

// argsValue is a call's arguments for a front end: JSON as it is, text
// that is not JSON (a model's malformed arguments) as a string.
func argsValue(raw json.RawMessage) any {
	switch {
	case len(raw) == 0:
		return map[string]any{}
	case !json.Valid(raw):
		return string(raw)
	}
	return raw
}

// threadSession loads the session a protocol's conversation id names, for
// agent: nil when it does not exist yet (the first message creates it);
// false after answering 400 (another agent's), 409 (a new message under an
// id someone the caller may not see took: another user's, another
// tenant's) or 404 (a resuming request about such a conversation).
func (s *Server) threadSession(w http.ResponseWriter, r *http.Request, id, agent string, resuming bool) (*cairn.Session, bool) {
	sess, err := s.runner.Session(r.Context(), id)
	switch {
	case err == nil && resuming && !canSee(callerOf(r), sess):
		// Decisions on a conversation the caller may not see: as for one
		// that does not exist (another user's, another tenant's).
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no conversation %q", id))
		return nil, false
	case errors.Is(err, cairn.ErrNotFound):
		return nil, true
	case err != nil:
		s.fail(w, r, err)
		return nil, false
	case sess.Agent != agent:
		writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("conversation %s belongs to agent %s, not %s", sess.ID, sess.Agent, agent))
		return nil, false
	case !canSee(callerOf(r), sess):
		// A client-chosen id someone else took first is refused, not
		// shared; the message does not say whose it is.
		writeError(w, http.StatusConflict, "conflict", fmt.Sprintf("the conversation id %q is taken; start the conversation under another id (a random one, as useChat and AG-UI clients make by default)", id))
		return nil, false
	}
	return sess, true
}

// learnSession reads the log of a session a turn goes on in (nil: a new one).
func (s *Server) learnSession(r *http.Request, t *turnReader, sess *cairn.Session) {
	if sess == nil {
		return
	}
	if evs, err := s.runner.Events(r.Context(), sess.ID, 0); err == nil {
		t.learn(evs)
	}
}

// sseWriter writes Server-Sent Events of JSON data, one flush each.
type sseWriter struct {
	w     http.ResponseWriter
	flush func()
	buf   bytes.Buffer
}

func (o *sseWriter) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	o.raw(b)
}

func (o *sseWriter) raw(data []byte) {
	o.buf.Reset()
	o.buf.WriteString("data: ")
	o.buf.Write(data)
	o.buf.WriteString("\n\n")
	extendWrite(o.w)
	_, _ = o.w.Write(o.buf.Bytes())
	o.flush()
}
