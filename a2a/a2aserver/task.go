package a2aserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/cairnhq/cairn"
)

// message is a SendMessage request, checked: a new task's text, or what
// goes on with an existing task.
type message struct {
	// id is the task's id: the session's (for a new task, taskIDFor).
	id        a2a.TaskID
	contextID string
	// sess is the task's session as read; nil for a new task.
	sess *cairn.Session
	text string
	// data is the message's data part as JSON; nil without one.
	data []byte
	// detach: the caller asked for the task at once
	// (configuration.returnImmediately); its turn goes on behind.
	detach bool
}

// maxContextID bounds a caller's context id, which is kept with the session.
const maxContextID = 128

// read checks req as c sends it: the message's role and parts, and the
// task it goes on with, which c must see. A new task's id is made from the
// caller and the message's id, so that the same message sent again (a
// retry after a lost answer) is the same task, never a second one.
func (h *handler) read(ctx context.Context, c Caller, req *a2a.SendMessageRequest) (*message, error) {
	if req == nil || req.Message == nil {
		return nil, errParams(`params.message is required: {"message": {"messageId": "…", "role": "ROLE_USER", "parts": [{"text": "…"}]}}`)
	}
	msg := req.Message
	if msg.Role != a2a.MessageRoleUser {
		return nil, errParams("message.role is %q: a message to an agent has the role ROLE_USER", msg.Role)
	}
	m := &message{}
	var texts []string
	for i, p := range msg.Parts {
		switch v := p.Content.(type) {
		case a2a.Text:
			texts = append(texts, string(v))
		case a2a.Data:
			if m.data != nil {
				return nil, errParams("message.parts[%d]: a message has at most one data part (the decisions)", i)
			}
			raw, err := json.Marshal(v.Value)
			if err != nil {
				return nil, errParams("message.parts[%d]: the data part is not JSON: %v", i, err)
			}
			m.data = raw
		default:
			return nil, errParams("message.parts[%d]: only text and data parts are taken (files and raw bytes are not)", i)
		}
	}
	m.text = strings.Join(texts, "\n")
	if msg.TaskID == "" {
		if m.text == "" {
			return nil, errParams("a new task needs a text part: the message for the agent (a data part decides on an input-required task: give its taskId)")
		}
		if m.data != nil {
			return nil, errParams("a data part decides on an input-required task: give its taskId; a new task takes text")
		}
		if len(msg.ContextID) > maxContextID {
			return nil, errParams("message.contextId has %d characters: at most %d", len(msg.ContextID), maxContextID)
		}
		m.contextID = msg.ContextID
		if m.contextID == "" {
			m.contextID = a2a.NewContextID()
		}
		m.id = taskIDFor(c.Name, msg.ID)
		m.detach = req.Config != nil && req.Config.ReturnImmediately
		return m, nil
	}
	sess, err := h.session(ctx, c, msg.TaskID)
	if err != nil {
		return nil, err
	}
	m.sess, m.id, m.contextID = sess, a2a.TaskID(sess.ID), contextOf(sess)
	if msg.ContextID != "" && msg.ContextID != m.contextID {
		return nil, errParams("message.contextId %q is not task %s's context (%q)", msg.ContextID, sess.ID, m.contextID)
	}
	return m, nil
}

// decisionPart is the data part that decides on an input-required task.
type decisionPart struct {
	Decisions []cairn.Decision `json:"decisions"`
	Seq       *int64           `json:"seq"`
}

// run starts m's task or goes on with it, as c, and returns its session
// once the turn stopped. The turn goes on if the caller goes away: its
// pause waits for anyone.
func (h *handler) run(ctx context.Context, c Caller, m *message, observe func(cairn.Event)) (*cairn.Session, error) {
	turn := context.WithoutCancel(ctx)
	if m.sess == nil {
		sess, err := h.r.Start(turn, h.agent, m.text, &cairn.StartOptions{ID: string(m.id), Owner: c.Name, Actor: c.actor(),
			Metadata: map[string]any{contextKey: m.contextID}, Observe: observe, Detach: m.detach && observe == nil})
		if errors.Is(err, cairn.ErrConflict) {
			// The same message again: its task, as it stands.
			if again, gerr := h.session(ctx, c, m.id); gerr == nil && again.Owner == c.Name {
				return again, nil
			}
		}
		if err != nil {
			return nil, h.fail(err, "start")
		}
		return sess, nil
	}
	sess := m.sess
	opts := &cairn.TurnOptions{Actor: c.actor(), Observe: observe}
	if sess.Status != cairn.StatusPaused {
		return nil, a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf("task %s is %s: only an input-required task takes a message; "+
			"start another task with a message without taskId (contextId %q)", sess.ID, sess.Status, m.contextID))
	}
	var out *cairn.Session
	var err error
	switch {
	case m.data != nil:
		d, derr := readDecisions(m.data, sess.Seq)
		if derr != nil {
			return nil, derr
		}
		out, err = h.r.Resume(turn, sess.ID, *d.Seq, d.Decisions, opts)
	case m.text != "":
		asks := slices.DeleteFunc(slices.Clone(sess.Interrupts), func(in cairn.Interrupt) bool { return !in.Kind.ForPerson() })
		if len(asks) != 1 {
			return nil, errParams(`task %s waits on %d decisions: a text part answers only a lone question; send a data part {"decisions": […], "seq": %d}`, sess.ID, len(asks), sess.Seq)
		}
		in := asks[0]
		switch {
		case in.Kind == cairn.KindMessage:
			if !c.maySpeak(sess) {
				return nil, a2a.NewError(a2a.ErrUnauthorized, fmt.Sprintf("task %s belongs to another user: only its owner replies to its agent", sess.ID))
			}
			out, err = h.r.Send(turn, sess.ID, m.text, sess.Seq, opts)
		case in.Kind == cairn.KindInput && len(in.Schema) == 0 && in.URL == "":
			out, err = h.r.Resume(turn, sess.ID, sess.Seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionAnswer, Text: m.text}}, opts)
		default:
			return nil, errParams(`task %s waits for a decision on %s (%s), which text does not give: send a data part {"decisions": [{"interrupt_id": %q, "action": …}], "seq": %d}`,
				sess.ID, in.Kind, in.Tool, in.ID, sess.Seq)
		}
	default:
		return nil, errParams("the message has no text and no data part")
	}
	if err != nil {
		return nil, h.fail(err, "decide")
	}
	return out, nil
}

// task is sess as an A2A task, as c sees it.
func (h *handler) task(c Caller, sess *cairn.Session) *a2a.Task {
	ts := sess.UpdatedAt
	t := &a2a.Task{ID: a2a.TaskID(sess.ID), ContextID: contextOf(sess), Status: a2a.TaskStatus{State: state(sess), Timestamp: &ts}}
	switch sess.Status {
	case cairn.StatusPaused:
		t.Status.Message = h.pauseMessage(c, sess)
	case cairn.StatusCompleted:
		t.Artifacts = []*a2a.Artifact{output(sess)}
	case cairn.StatusFailed:
		if sess.Error != nil {
			t.Status.Message = agentMessage(t, fmt.Sprintf("%s-%d", sess.ID, sess.Seq), a2a.NewTextPart(sess.Error.Message))
		}
	case cairn.StatusRunning, cairn.StatusCancelled: // the state says it all
	}
	return t
}

// pauseMessage is the status message of an input-required task: what each
// interrupt asks, as text, and the interrupts as the HTTP API shows them
// to c (may_decide included) with the seq to decide on, as data.
func (h *handler) pauseMessage(c Caller, sess *cairn.Session) *a2a.Message {
	ins := slices.Clone(sess.Interrupts)
	var asks []string
	for i := range ins {
		may := h.r.Decides(c.actor(), sess.Owner, &ins[i])
		ins[i].MayDecide = &may
		if ins[i].Kind.ForPerson() {
			asks = append(asks, ins[i].Ask().Text)
		}
	}
	// As written, not through any: arguments keep their numbers whole.
	view, err := json.Marshal(ins)
	if err != nil {
		view = []byte("[]")
	}
	parts := []*a2a.Part{}
	if len(asks) > 0 {
		parts = append(parts, a2a.NewTextPart(strings.Join(asks, "\n")))
	}
	parts = append(parts, a2a.NewDataPart(map[string]any{"interrupts": json.RawMessage(view), "seq": sess.Seq}))
	return agentMessage(&a2a.Task{ID: a2a.TaskID(sess.ID), ContextID: contextOf(sess)}, fmt.Sprintf("%s-%d", sess.ID, sess.Seq), parts...)
}

// agentMessage is the agent's message on t; its id names what it reports
// (a session's seq), so the same status read twice is the same message.
func agentMessage(t *a2a.Task, id string, parts ...*a2a.Part) *a2a.Message {
	return &a2a.Message{ID: id, Role: a2a.MessageRoleAgent, TaskID: t.ID, ContextID: t.ContextID, Parts: parts}
}

// output is a completed session's answer as the task's artifact: its
// structured output as data, else its text.
func output(sess *cairn.Session) *a2a.Artifact {
	part := a2a.NewTextPart(sess.Output)
	if len(sess.OutputJSON) > 0 {
		var v any
		if json.Unmarshal(sess.OutputJSON, &v) == nil {
			part = a2a.NewDataPart(v)
		}
	}
	return &a2a.Artifact{ID: "output", Name: "output", Parts: []*a2a.Part{part}}
}

// final are the events that end a stream on t: its artifact, if any,
// then its status.
func (h *handler) final(t *a2a.Task) []a2a.Event {
	var out []a2a.Event
	for _, a := range t.Artifacts {
		out = append(out, &a2a.TaskArtifactUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Artifact: a, LastChunk: true})
	}
	return append(out, &a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: t.Status})
}

// progress is what a stream tells of ev on t: a working status when a
// tool starts; nil for the rest.
func progress(t *a2a.Task, ev cairn.Event) a2a.Event {
	if ev.Type != cairn.EventToolStarted {
		return nil
	}
	var p struct {
		Tool string `json:"tool"`
	}
	if json.Unmarshal(ev.Data, &p) != nil || p.Tool == "" {
		return nil
	}
	ts := ev.Time
	return &a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: &ts,
		Message: agentMessage(t, fmt.Sprintf("%s-%d", t.ID, ev.Seq), a2a.NewTextPart("Running "+p.Tool+"."))}}
}

// turnEnded reports whether an event of type t ends a turn.
func turnEnded(t cairn.EventType) bool {
	switch t {
	case cairn.EventTurnPaused, cairn.EventTurnCompleted, cairn.EventTurnFailed, cairn.EventTurnCancelled, cairn.EventTurnInterrupted:
		return true
	}
	return false
}

// state is sess's status as an A2A task state. A pause that waits only on
// another system (a tool that finishes later) is working: nothing is
// asked of anyone.
func state(sess *cairn.Session) a2a.TaskState {
	switch sess.Status {
	case cairn.StatusPaused:
		for _, in := range sess.Interrupts {
			if in.Kind.ForPerson() || in.Kind == cairn.KindClient {
				return a2a.TaskStateInputRequired
			}
		}
		return a2a.TaskStateWorking
	case cairn.StatusCompleted:
		return a2a.TaskStateCompleted
	case cairn.StatusFailed:
		return a2a.TaskStateFailed
	case cairn.StatusCancelled:
		return a2a.TaskStateCanceled
	case cairn.StatusRunning:
	}
	return a2a.TaskStateWorking
}

// contextOf is the A2A context id of a task's session.
func contextOf(sess *cairn.Session) string {
	if v, ok := sess.Metadata[contextKey].(string); ok && v != "" {
		return v
	}
	return sess.ID
}

// taskIDFor is the id of the task a caller's message starts: the same
// message (id) of the same caller is the same task. A message without an
// id starts a task of its own.
func taskIDFor(caller, messageID string) a2a.TaskID {
	if messageID == "" {
		messageID = a2a.NewMessageID()
	}
	sum := sha256.Sum256([]byte(caller + "\x00" + messageID))
	return a2a.TaskID("a2a-" + hex.EncodeToString(sum[:16]))
}

// readDecisions reads a data part that decides (decisionPart): strict,
// with a seq and at least one decision, each naming its interrupt; now is
// the task's seq, for the error that asks for one.
func readDecisions(data []byte, now int64) (*decisionPart, error) {
	var d decisionPart
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, errParams(`the data part must be {"decisions": [{"interrupt_id": "…", "action": "approve"}], "seq": N}: %v`, err)
	}
	if dec.More() {
		return nil, errParams("the data part holds more than one JSON value")
	}
	if d.Seq == nil {
		return nil, errParams(`the data part's "seq" is required: the seq of the input-required status you decide on (%d now)`, now)
	}
	if len(d.Decisions) == 0 {
		return nil, errParams(`the data part's "decisions" must list at least one decision`)
	}
	for i, x := range d.Decisions {
		if x.InterruptID == "" {
			return nil, errParams("decisions[%d].interrupt_id is required", i)
		}
	}
	return &d, nil
}
