package server

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// AG-UI (the Agent–User Interaction protocol of CopilotKit and others): a
// run is RunAgentInput in, events out; a pause ends the run with an
// interrupt outcome, and a new run's resume entries answer it. See
// docs/protocols.md.

// aguiInput is the part of RunAgentInput Cairn reads.
type aguiInput struct {
	ThreadID string          `json:"threadId"`
	RunID    string          `json:"runId"`
	Messages []aguiMessage   `json:"messages"`
	Resume   []aguiResume    `json:"resume"`
	State    json.RawMessage `json:"state"`
	// Tools are the frontend tools the client runs, AG-UI's way (TOOL_CALL
	// events, then a tool message in the next run): the agent's own
	// client tools (kind: client) the client names here, and tools the
	// agent does not have, offered to its model with this run's message
	// (cairn.StartOptions.ClientTools) unless its config forbids them.
	Tools []aguiTool `json:"tools"`
}

type aguiTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// maxClientResult bounds the result a client sends for one of its tools:
// untrusted input, which the model reads.
const maxClientResult = 256 << 10

// declared are the client's tools the agent does not have: the ones it
// declares for this message.
func (s *Server) declared(agent string, tools []aguiTool) []model.ToolDefinition {
	own := map[string]bool{}
	for _, a := range s.runner.Agents() {
		if a.Name == agent {
			for _, t := range a.Tools {
				own[t.Name] = true
			}
		}
	}
	var out []model.ToolDefinition
	for _, t := range tools {
		if !own[t.Name] {
			out = append(out, model.ToolDefinition{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
		}
	}
	return out
}

type aguiMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// ToolCallID and Error are a tool message's: the result (Content) or
	// the error of a frontend tool the client ran.
	ToolCallID string `json:"toolCallId"`
	Error      string `json:"error"`
}

type aguiResume struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload"`
}

// aguiPayload is what a resolved resume entry may carry: an approval
// (approved, editedArgs, reason), an answer (text, or content for a
// question with a schema), or a review (approved, editedOutput, reason).
type aguiPayload struct {
	Approved     *bool           `json:"approved"`
	EditedArgs   json.RawMessage `json:"editedArgs"`
	EditedOutput json.RawMessage `json:"editedOutput"`
	Reason       string          `json:"reason"`
	Text         string          `json:"text"`
	Content      json.RawMessage `json:"content"`
	// Output completes a call the client runs or one waiting on a system;
	// Error fails it.
	Output json.RawMessage `json:"output"`
	Error  string          `json:"error"`
}

// aguiInterrupt is one interrupt of a RUN_FINISHED outcome.
type aguiInterrupt struct {
	ID             string          `json:"id"`
	Reason         string          `json:"reason"`
	Message        string          `json:"message,omitempty"`
	ToolCallID     string          `json:"toolCallId,omitempty"`
	ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
	ExpiresAt      string          `json:"expiresAt,omitempty"`
	// Metadata carries Cairn's word on the call: its preview ("preview",
	// the tool's dry run), for the client to draw beside the approval.
	Metadata map[string]any `json:"metadata,omitempty"`
}

func (s *Server) agui(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("agent")
	var in aguiInput
	if !decodeLenient(w, r, &in, maxBody) {
		return
	}
	if in.ThreadID == "" || in.RunID == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", `"threadId" (the session id) and "runId" are required`)
		return
	}
	p := callerOf(r)
	notTheirs := fmt.Sprintf("only the owner of thread %s or an admin posts messages in it", in.ThreadID)
	// A run that resumes (decisions, or the results of frontend tools)
	// is about a thread that exists.
	resuming := len(in.Resume) > 0 || len(in.Messages) > 0 && in.Messages[len(in.Messages)-1].Role == "tool"
	sess, ok := s.threadSession(w, r, in.ThreadID, agent, resuming)
	if !ok {
		return
	}
	release, flush, ok := s.openStream(w, in.ThreadID)
	if !ok {
		return
	}
	defer release()
	st := &aguiStream{sseWriter: sseWriter{w: w, flush: flush}, threadID: in.ThreadID, runID: in.RunID}
	st.turnReader = newTurnReader(st)
	st.send(map[string]any{"type": "RUN_STARTED", "threadId": in.ThreadID, "runId": in.RunID})
	s.learnSession(r, st.turnReader, sess)
	ctx := turnContext(r)
	opts := &cairn.TurnOptions{Actor: actorOf(p), Observe: st.observe}
	var out *cairn.Session
	var err error
	var toolResults []cairn.Decision
	if sess != nil {
		toolResults = aguiToolResults(sess, in.Messages)
	}
	switch {
	case len(in.Resume) > 0:
		if sess == nil {
			st.fail("unknown_interrupt", fmt.Sprintf("thread %s has no run to resume", in.ThreadID))
			return
		}
		ds, reply, replay, err := aguiDecisions(sess, st.decided, in.Resume)
		refused := s.decisionRefused(p, sess, ds)
		switch {
		case err != nil:
			st.fail(cairn.ErrorCode(err), err.Error())
			return
		case replay: // every entry was applied before: answer as things are
			out = sess
		case refused != nil:
			st.fail(cairn.ErrorCode(refused), refused.Error())
			return
		case reply != nil && !canSpeak(p, sess):
			st.fail("forbidden", notTheirs)
			return
		case reply != nil:
			out, err = s.runner.Send(ctx, sess.ID, *reply, sess.Seq, opts)
		default:
			st.answering(ds)
			out, err = s.runner.Resume(ctx, sess.ID, sess.Seq, ds, opts)
		}
		if err != nil {
			st.fail(cairn.ErrorCode(err), err.Error())
			return
		}
	case len(toolResults) > 0:
		// The client ran frontend tools: their tool messages complete the calls.
		ds := toolResults
		if refused := s.decisionRefused(p, sess, ds); refused != nil {
			st.fail(cairn.ErrorCode(refused), refused.Error())
			return
		}
		st.answering(ds)
		if out, err = s.runner.Resume(ctx, sess.ID, sess.Seq, ds, opts); err != nil {
			st.fail(cairn.ErrorCode(err), err.Error())
			return
		}
	default:
		text := aguiUserText(in.Messages)
		if text == "" {
			st.fail("invalid_request", "the last message is not a user message with text, and there is nothing to resume")
			return
		}
		declared := s.declared(agent, in.Tools)
		if sess == nil {
			out, err = s.runner.Start(ctx, agent, text, &cairn.StartOptions{ID: in.ThreadID, Owner: p.name, Actor: actorOf(p), Observe: st.observe, ClientTools: declared})
		} else if !canSpeak(p, sess) {
			st.fail("forbidden", notTheirs)
			return
		} else {
			opts.ClientTools = declared
			out, err = s.runner.Send(ctx, sess.ID, text, 0, opts)
		}
		if err != nil {
			st.fail(cairn.ErrorCode(err), err.Error())
			return
		}
	}
	st.finish(out, s.aguiInterrupts(out, st, frontendTools(in.Tools)))
}

// frontendTools are the names of the tools the client runs.
func frontendTools(tools []aguiTool) map[string]bool {
	out := make(map[string]bool, len(tools))
	for _, t := range tools {
		out[t.Name] = true
	}
	return out
}

// waitingByCall maps the tool call id of each pending interrupt of the
// session of one of kinds to it: how a protocol that answers a tool call
// by its id (the AI SDK's tool outputs, AG-UI's tool messages) finds the
// interrupt the answer decides. Empty unless the session is paused.
func waitingByCall(sess *cairn.Session, kinds ...cairn.Kind) map[string]cairn.Interrupt {
	out := map[string]cairn.Interrupt{}
	if sess == nil || sess.Status != cairn.StatusPaused {
		return out
	}
	for _, in := range sess.Interrupts {
		if n := len(in.Path); n > 0 && slices.Contains(kinds, in.Kind) {
			out[in.Path[n-1].CallID] = in
		}
	}
	return out
}

// aguiToolResults are the completions the trailing tool messages give the
// session's pending client calls (matched by tool call id): the content
// (JSON when it parses, else the text) completes a call, an error fails it.
func aguiToolResults(sess *cairn.Session, ms []aguiMessage) []cairn.Decision {
	calls := waitingByCall(sess, cairn.KindClient)
	var ds []cairn.Decision
	for i := len(ms) - 1; i >= 0 && ms[i].Role == "tool"; i-- {
		in, ok := calls[ms[i].ToolCallID]
		if !ok {
			continue
		}
		delete(calls, ms[i].ToolCallID)
		id := in.ID
		if n := len(ms[i].Content) + len(ms[i].Error); n > maxClientResult {
			ds = append(ds, cairn.Decision{InterruptID: id, Action: cairn.ActionFail,
				Reason: fmt.Sprintf("the client's result of %s was %d bytes, more than the %d Cairn takes; it was not passed on", in.Tool, n, maxClientResult)})
			continue
		}
		if ms[i].Error != "" {
			ds = append(ds, cairn.Decision{InterruptID: id, Action: cairn.ActionFail, Reason: ms[i].Error})
			continue
		}
		output := json.RawMessage(ms[i].Content)
		var text string
		if json.Unmarshal(output, &text) == nil && json.Valid([]byte(text)) {
			output = json.RawMessage(text) // the content is a string holding JSON: take the JSON
		}
		ds = append(ds, cairn.Decision{InterruptID: id, Action: cairn.ActionComplete, Output: output})
	}
	return ds
}

// aguiDecisions turns resume entries into decisions on the pending
// interrupts (or the reply to an agent waiting for a message). An entry for
// an interrupt decided before (decided, from the log) is skipped: resume is
// idempotent, and replay is true when all were; one the session never had
// is an error.
func aguiDecisions(sess *cairn.Session, decided map[string]bool, entries []aguiResume) (ds []cairn.Decision, reply *string, replay bool, err error) {
	pending := map[string]cairn.Interrupt{}
	for _, in := range sess.Interrupts {
		pending[in.ID] = in
	}
	for i, e := range entries {
		in, ok := pending[e.InterruptID]
		if !ok {
			if decided[e.InterruptID] {
				continue
			}
			return nil, nil, false, &session.Error{Code: session.CodeUnknownInterrupt, Interrupt: e.InterruptID,
				Message: fmt.Sprintf("resume[%d]: no pending interrupt %q in thread %s", i, e.InterruptID, sess.ID)}
		}
		var pl aguiPayload
		if len(e.Payload) > 0 && json.Unmarshal(e.Payload, &pl) != nil {
			return nil, nil, false, &session.Error{Code: session.CodeInvalidRequest, Message: fmt.Sprintf("resume[%d].payload is not an object", i)}
		}
		switch {
		case e.Status == "cancelled" && (in.Kind == cairn.KindClient || in.Kind == cairn.KindExternal):
			ds = append(ds, cairn.Decision{InterruptID: in.ID, Action: cairn.ActionFail, Reason: cmp.Or(pl.Reason, pl.Error, "cancelled by the user")})
		case e.Status == "cancelled":
			ds = append(ds, cairn.Decision{InterruptID: in.ID, Action: cairn.ActionReject, Reason: cmp.Or(pl.Reason, "cancelled by the user")})
		case e.Status != "resolved":
			return nil, nil, false, &session.Error{Code: session.CodeInvalidRequest, Message: fmt.Sprintf("resume[%d].status %q is not resolved or cancelled", i, e.Status)}
		case in.Kind == cairn.KindMessage:
			text := pl.Text
			reply = &text
		case (in.Kind == cairn.KindClient || in.Kind == cairn.KindExternal) && pl.Error != "":
			ds = append(ds, cairn.Decision{InterruptID: in.ID, Action: cairn.ActionFail, Reason: pl.Error})
		case in.Kind == cairn.KindClient || in.Kind == cairn.KindExternal:
			ds = append(ds, cairn.Decision{InterruptID: in.ID, Action: cairn.ActionComplete, Output: pl.Output})
		case in.Kind == cairn.KindInput && pl.Approved != nil && !*pl.Approved:
			ds = append(ds, cairn.Decision{InterruptID: in.ID, Action: cairn.ActionReject, Reason: pl.Reason})
		case in.Kind == cairn.KindInput:
			content := pl.Content
			if len(in.Schema) > 0 && len(content) == 0 {
				content = e.Payload // the payload is the form's object
			}
			d := cairn.Decision{InterruptID: in.ID, Action: cairn.ActionAnswer, Text: pl.Text}
			if len(in.Schema) > 0 {
				d.Content, d.Text = content, ""
			}
			ds = append(ds, d)
		case pl.Approved != nil && !*pl.Approved:
			ds = append(ds, cairn.Decision{InterruptID: in.ID, Action: cairn.ActionReject, Reason: pl.Reason})
		case in.Kind == cairn.KindReview && len(pl.EditedOutput) > 0:
			ds = append(ds, cairn.Decision{InterruptID: in.ID, Action: cairn.ActionEdit, Output: pl.EditedOutput})
		case in.Kind == cairn.KindReview:
			ds = append(ds, cairn.Decision{InterruptID: in.ID, Action: cairn.ActionApprove})
		default:
			ds = append(ds, cairn.Decision{InterruptID: in.ID, Action: cairn.ActionApprove, Arguments: pl.EditedArgs})
		}
	}
	return ds, reply, len(ds) == 0 && reply == nil, nil
}

// aguiInterrupts is a paused session's interrupts as AG-UI shows them.
func (s *Server) aguiInterrupts(sess *cairn.Session, st *aguiStream, frontend map[string]bool) []aguiInterrupt {
	if sess == nil || sess.Status != cairn.StatusPaused {
		return nil
	}
	var out []aguiInterrupt
	for _, in := range sess.Interrupts {
		if in.Kind == cairn.KindClient && frontend[in.Tool] {
			continue // a frontend tool: the client runs it from its TOOL_CALL events
		}
		ai := aguiInterrupt{ID: in.ID, Reason: "input_required", ToolCallID: st.asked[in.ID]}
		if in.ExpiresAt != nil {
			ai.ExpiresAt = in.ExpiresAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")
		}
		switch in.Kind {
		case cairn.KindApproval:
			ai.Reason, ai.Message = "tool_call", cmp.Or(in.Message, fmt.Sprintf("Run %s with %s?", in.Tool, in.Arguments))
			if in.Preview != nil {
				ai.Metadata = map[string]any{"preview": in.Preview}
			}
			args := s.toolParameters(in)
			ai.ResponseSchema = json.RawMessage(`{"type":"object","properties":{"approved":{"type":"boolean"},"editedArgs":` + string(args) +
				`,"reason":{"type":"string","description":"told to the model when not approved"}},"required":["approved"]}`)
		case cairn.KindInput:
			ai.Message = in.Question
			ai.ResponseSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
			if len(in.Schema) > 0 {
				ai.ResponseSchema = in.Schema
			}
		case cairn.KindMessage:
			ai.Message = in.Text
			ai.ResponseSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"your reply"}},"required":["text"]}`)
		case cairn.KindReview:
			ai.Reason, ai.Message = "review", fmt.Sprintf("Review the answer: %s", in.Output)
			schema := cmp.Or(string(in.OutputSchema), "{}")
			ai.ResponseSchema = json.RawMessage(`{"type":"object","properties":{"approved":{"type":"boolean"},"editedOutput":` + schema +
				`,"reason":{"type":"string","description":"told to the model when not approved"}},"required":["approved"]}`)
		case cairn.KindClient, cairn.KindExternal:
			ai.Reason = "client_tool"
			ai.Message = fmt.Sprintf("Run %s with %s and send its output (or an error).", in.Tool, in.Arguments)
			if in.Kind == cairn.KindExternal {
				ai.Reason, ai.Message = "external", cmp.Or(in.Message, fmt.Sprintf("Tool %s waits on another system.", in.Tool))
			}
			result := cmp.Or(string(in.ResultSchema), "{}")
			ai.ResponseSchema = json.RawMessage(`{"type":"object","properties":{"output":` + result +
				`,"error":{"type":"string","description":"why the tool could not run; told to the model"}}}`)
		}
		out = append(out, ai)
	}
	return out
}

// toolParameters is the JSON Schema of the arguments of the interrupt's
// tool (what editedArgs must match).
func (s *Server) toolParameters(in cairn.Interrupt) json.RawMessage {
	agent := ""
	if n := len(in.Path); n > 0 {
		agent = in.Path[n-1].Agent
	}
	for _, a := range s.runner.Agents() {
		if agent != "" && a.Name != agent {
			continue
		}
		for _, t := range a.Tools {
			if t.Name == in.Tool && len(t.Parameters) > 0 {
				return t.Parameters
			}
		}
	}
	return json.RawMessage(`{"type":"object"}`)
}

// aguiUserText is the text of the last message when it is the user's.
func aguiUserText(ms []aguiMessage) string {
	if len(ms) == 0 || ms[len(ms)-1].Role != "user" {
		return ""
	}
	var text string
	if json.Unmarshal(ms[len(ms)-1].Content, &text) == nil {
		return text
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(ms[len(ms)-1].Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// aguiStream writes a run as AG-UI events (a turnReader sink).
type aguiStream struct {
	*turnReader
	sseWriter
	threadID, runID string
	textID          string // the open text message
	lastMsg         string // the last assistant message, parent of its calls
	n               int
}

func (a *aguiStream) id(prefix string) string {
	a.n++
	return fmt.Sprintf("%s_%s_%d", prefix, a.runID, a.n)
}

func (a *aguiStream) textDelta(delta string) {
	if a.textID == "" {
		a.textID = a.id("msg")
		a.lastMsg = a.textID
		a.send(map[string]any{"type": "TEXT_MESSAGE_START", "messageId": a.textID, "role": "assistant"})
	}
	a.send(map[string]any{"type": "TEXT_MESSAGE_CONTENT", "messageId": a.textID, "delta": delta})
}

func (a *aguiStream) closeText() {
	if a.textID != "" {
		a.send(map[string]any{"type": "TEXT_MESSAGE_END", "messageId": a.textID})
		a.textID = ""
	}
}

func (a *aguiStream) toolCall(id, name string, args json.RawMessage) {
	start := map[string]any{"type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": name}
	if a.lastMsg != "" {
		start["parentMessageId"] = a.lastMsg
	}
	a.send(start)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	a.send(map[string]any{"type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": string(args)})
	a.send(map[string]any{"type": "TOOL_CALL_END", "toolCallId": id})
}

func (a *aguiStream) modelDone(calls []shownCall) {
	a.closeText()
	if len(calls) > 0 && a.lastMsg == "" {
		a.lastMsg = a.id("msg")
	}
	for _, c := range calls {
		a.toolCall(c.ID, c.Name, c.Args)
	}
	a.lastMsg = ""
}

func (a *aguiStream) approval(callID string, in cairn.Interrupt, known bool) {
	if !known {
		a.closeText()
		a.toolCall(callID, in.Tool, in.Arguments)
	}
}

func (a *aguiStream) result(callID, content string, isError, denied bool) {
	a.send(map[string]any{"type": "TOOL_CALL_RESULT", "messageId": a.id("tool"), "toolCallId": callID, "content": content, "role": "tool"})
}

// fail ends the run with RUN_ERROR.
func (a *aguiStream) fail(code, message string) {
	a.lock()
	defer a.unlock()
	a.closeText()
	a.send(map[string]any{"type": "RUN_ERROR", "message": message, "code": code})
}

// finish ends the run with its outcome: the interrupts it waits for, or
// success with the output.
func (a *aguiStream) finish(sess *cairn.Session, interrupts []aguiInterrupt) {
	a.lock()
	defer a.unlock()
	a.closeText()
	ev := map[string]any{"type": "RUN_FINISHED", "threadId": a.threadID, "runId": a.runID}
	switch {
	case sess.Status == cairn.StatusFailed:
		msg := "the run failed"
		if sess.Error != nil {
			msg = sess.Error.Message
		}
		a.send(map[string]any{"type": "RUN_ERROR", "message": msg, "code": "failed"})
		return
	case len(interrupts) > 0:
		ev["outcome"] = map[string]any{"type": "interrupt", "interrupts": interrupts}
	case sess.Status == cairn.StatusCancelled:
		ev["outcome"] = map[string]any{"type": "cancelled"}
	default:
		ev["outcome"] = map[string]any{"type": "success"}
		if sess.Output != "" {
			ev["result"] = sess.Output
		}
	}
	a.send(ev)
}
