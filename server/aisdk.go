package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/session"
)

// The Vercel AI SDK's UI message stream (protocol v1), so that a front end
// built with useChat / DefaultChatTransport works against Cairn unchanged.
// See docs/protocols.md.
//
// The client re-posts its whole message history each time; Cairn trusts
// none of it but the last user message's text and the approval responses,
// and those only where they answer a pending interrupt of this session.

// chatRequest is what DefaultChatTransport sends.
type chatRequest struct {
	ID        string      `json:"id"`
	Messages  []uiMessage `json:"messages"`
	Trigger   string      `json:"trigger"`
	MessageID string      `json:"messageId"`
	// EditedArguments is Cairn's addition (the SDK has no slot for it):
	// replacement arguments by approval id, sent as a body field with the
	// re-post (sendMessage's or the transport's body option).
	EditedArguments map[string]json.RawMessage `json:"editedArguments"`
}

type uiMessage struct {
	ID    string   `json:"id"`
	Role  string   `json:"role"`
	Parts []uiPart `json:"parts"`
}

type uiPart struct {
	Type       string      `json:"type"`
	Text       string      `json:"text"`
	ToolCallID string      `json:"toolCallId"`
	State      string      `json:"state"`
	Approval   *uiApproval `json:"approval"`
	// Output and ErrorText are what the client's addToolOutput gave a
	// tool it runs (states output-available, output-error).
	Output    json.RawMessage `json:"output"`
	ErrorText string          `json:"errorText"`
}

type uiApproval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved"`
	Reason   string `json:"reason"`
}

// The chunks Cairn sends, with exactly the fields the protocol documents:
// ai 6.0.0–6.0.230 and 7.0.0–7.0.31 reject unknown ones.
type (
	chunkStart struct {
		Type      string `json:"type"`
		MessageID string `json:"messageId,omitempty"`
	}
	chunkType struct {
		Type string `json:"type"`
	}
	chunkText struct {
		Type  string `json:"type"`
		ID    string `json:"id"`
		Delta string `json:"delta,omitempty"`
	}
	chunkToolInput struct {
		Type       string `json:"type"`
		ToolCallID string `json:"toolCallId"`
		ToolName   string `json:"toolName"`
		Input      any    `json:"input"`
		// ProviderMetadata carries Cairn's word on the call: its preview
		// ({"cairn": {"preview": …}}), which the client keeps as the
		// part's callProviderMetadata. Every ai version takes it here.
		ProviderMetadata map[string]map[string]any `json:"providerMetadata,omitempty"`
	}
	chunkApproval struct {
		Type       string `json:"type"`
		ApprovalID string `json:"approvalId"`
		ToolCallID string `json:"toolCallId"`
	}
	chunkToolOutput struct {
		Type       string `json:"type"`
		ToolCallID string `json:"toolCallId"`
		Output     any    `json:"output"`
	}
	chunkToolError struct {
		Type       string `json:"type"`
		ToolCallID string `json:"toolCallId"`
		ErrorText  string `json:"errorText"`
	}
	chunkToolDenied struct {
		Type       string `json:"type"`
		ToolCallID string `json:"toolCallId"`
	}
	chunkFinish struct {
		Type         string `json:"type"`
		FinishReason string `json:"finishReason,omitempty"`
	}
	chunkError struct {
		Type      string `json:"type"`
		ErrorText string `json:"errorText"`
	}
)

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("agent")
	var req chatRequest
	if !decodeLenient(w, r, &req, maxBody) {
		return
	}
	if req.ID == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", `"id" is required: the chat's id, which is the session's id`)
		return
	}
	p := callerOf(r)
	// A request whose last message is the assistant's answers its tool
	// calls (approvals, tool outputs): it is about a chat that exists.
	resuming := len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == "assistant"
	sess, ok := s.threadSession(w, r, req.ID, agent, resuming)
	if !ok {
		return
	}
	decisions, err := chatDecisions(sess, &req)
	if err != nil {
		writeError(w, http.StatusBadRequest, "unknown_interrupt", err.Error())
		return
	}
	if refused := s.decisionRefused(p, sess, decisions); refused != nil {
		s.fail(w, r, refused)
		return
	}
	text := lastUserText(req.Messages)
	if len(decisions) == 0 && sess != nil && !canSpeak(p, sess) {
		writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("only the owner of chat %s or an admin posts messages in it; an approver answers its approval requests", req.ID))
		return
	}
	if len(decisions) == 0 && text == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "the last message is neither a user message with text nor approval responses (or client tool outputs) for this chat's pending tool calls")
		return
	}

	st, release, ok := s.openUIStream(w, req.ID)
	if !ok {
		return
	}
	defer release()
	s.learnSession(r, st.turnReader, sess)
	st.answering(decisions)
	// The re-post after an approval continues the last assistant message:
	// the same id, or the SDK shows a second one.
	msgID := "msg_" + strings.TrimPrefix(req.ID, "ses_") + "_" + fmt.Sprint(len(req.Messages))
	if len(decisions) > 0 {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "assistant" && last.ID != "" {
			msgID = last.ID
		}
	}
	st.send(chunkStart{Type: "start", MessageID: msgID})
	ctx := turnContext(r)
	observe := st.observe
	var out *cairn.Session
	switch {
	case len(decisions) > 0:
		out, err = s.runner.Resume(ctx, sess.ID, sess.Seq, decisions, &cairn.TurnOptions{Actor: actorOf(p), Observe: observe})
	case sess == nil:
		out, err = s.runner.Start(ctx, agent, text, &cairn.StartOptions{ID: req.ID, Owner: p.name, Actor: actorOf(p), Observe: observe})
	default:
		out, err = s.runner.Send(ctx, sess.ID, text, 0, &cairn.TurnOptions{Actor: actorOf(p), Observe: observe})
	}
	st.end(out, err)
}

// chatDecisions reads the approval responses of the last assistant
// message: each must answer a pending approval of this session.
func chatDecisions(sess *cairn.Session, req *chatRequest) ([]cairn.Decision, error) {
	if len(req.Messages) == 0 {
		return nil, nil
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != "assistant" {
		return nil, nil
	}
	pending := map[string]bool{} // interrupt id → is a review
	if sess != nil {
		for _, in := range sess.Interrupts {
			switch in.Kind {
			case cairn.KindApproval, cairn.KindReview:
				pending[in.ID] = in.Kind == cairn.KindReview
			case cairn.KindClient, cairn.KindInput: // answered by a tool output: byCall
			case cairn.KindMessage, cairn.KindExternal:
			}
		}
	}
	byCall := waitingByCall(sess, cairn.KindClient, cairn.KindInput)
	var out []cairn.Decision
	seen := map[string]bool{}
	for _, part := range last.Parts {
		// addToolOutput on a tool the client runs, or on a question (the
		// AI SDK's way to answer one): its output (or error) decides it.
		if in, ok := byCall[part.ToolCallID]; ok && !seen[in.ID] && (part.State == "output-available" || part.State == "output-error") {
			seen[in.ID] = true
			out = append(out, toolOutputDecision(in, part))
			continue
		}
		if part.State != "approval-responded" || part.Approval == nil || part.Approval.Approved == nil {
			continue
		}
		id := part.Approval.ID
		review, ok := pending[id]
		if !ok {
			return nil, fmt.Errorf("approval %q does not answer a pending tool call of chat %s (already decided, or another chat's)", id, req.ID)
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		d := cairn.Decision{InterruptID: id, Action: cairn.ActionReject, Reason: part.Approval.Reason}
		switch {
		case *part.Approval.Approved && review && req.EditedArguments[id] != nil:
			// A review's edited answer comes where an approval's edited
			// arguments do.
			d = cairn.Decision{InterruptID: id, Action: cairn.ActionEdit, Output: req.EditedArguments[id]}
		case *part.Approval.Approved && review:
			d = cairn.Decision{InterruptID: id, Action: cairn.ActionApprove}
		case *part.Approval.Approved:
			d = cairn.Decision{InterruptID: id, Action: cairn.ActionApprove, Arguments: req.EditedArguments[id]}
		}
		out = append(out, d)
	}
	return out, nil
}

// toolOutputDecision is what a tool part's output decides: a client
// call's result (or failure), or a question's answer (or its refusal). A
// question with a schema takes the output as its content; a plain one its
// text (a string output, or the output's JSON).
func toolOutputDecision(in cairn.Interrupt, part uiPart) cairn.Decision {
	switch {
	case in.Kind == cairn.KindClient && part.State == "output-error":
		return cairn.Decision{InterruptID: in.ID, Action: cairn.ActionFail, Reason: part.ErrorText}
	case in.Kind == cairn.KindClient:
		return cairn.Decision{InterruptID: in.ID, Action: cairn.ActionComplete, Output: part.Output}
	case part.State == "output-error":
		return cairn.Decision{InterruptID: in.ID, Action: cairn.ActionReject, Reason: part.ErrorText}
	case len(in.Schema) > 0:
		return cairn.Decision{InterruptID: in.ID, Action: cairn.ActionAnswer, Content: part.Output}
	}
	var text string
	if json.Unmarshal(part.Output, &text) != nil {
		text = string(part.Output)
	}
	return cairn.Decision{InterruptID: in.ID, Action: cairn.ActionAnswer, Text: text}
}

// lastUserText is the text of the last message when it is the user's.
func lastUserText(ms []uiMessage) string {
	if len(ms) == 0 || ms[len(ms)-1].Role != "user" {
		return ""
	}
	var b strings.Builder
	for _, p := range ms[len(ms)-1].Parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// uiStream writes a turn as UI message chunks (it is the turnReader's
// sink). Steps open at the first text or response of a model call.
type uiStream struct {
	*turnReader
	sseWriter
	inStep   bool
	answered bool   // the open step has its model response
	textID   string // the open text part
	parts    int
}

// openUIStream opens a UI message stream on session id (counted like any
// event stream).
func (s *Server) openUIStream(w http.ResponseWriter, id string) (st *uiStream, release func(), ok bool) {
	w.Header().Set("x-vercel-ai-ui-message-stream", "v1")
	release, flush, ok := s.openStream(w, id)
	if !ok {
		return nil, nil, false
	}
	u := &uiStream{sseWriter: sseWriter{w: w, flush: flush}}
	u.turnReader = newTurnReader(u)
	return u, release, true
}

func (u *uiStream) step() {
	if u.inStep && u.answered {
		u.closeText()
		u.send(chunkType{Type: "finish-step"})
		u.inStep, u.answered = false, false
	}
	if !u.inStep {
		u.send(chunkType{Type: "start-step"})
		u.inStep = true
	}
}

func (u *uiStream) closeText() {
	if u.textID != "" {
		u.send(chunkText{Type: "text-end", ID: u.textID})
		u.textID = ""
	}
}

func (u *uiStream) textDelta(delta string) {
	u.step()
	if u.textID == "" {
		u.parts++
		u.textID = fmt.Sprintf("txt_%d", u.parts)
		u.send(chunkText{Type: "text-start", ID: u.textID})
	}
	u.send(chunkText{Type: "text-delta", ID: u.textID, Delta: delta})
}

func (u *uiStream) modelDone(calls []shownCall) {
	u.step()
	u.closeText()
	for _, c := range calls {
		u.send(chunkToolInput{Type: "tool-input-available", ToolCallID: c.ID, ToolName: c.Name, Input: argsValue(c.Args)})
	}
	u.answered = true
}

func (u *uiStream) approval(callID string, in cairn.Interrupt, known bool) {
	if !known || in.Preview != nil {
		if !known {
			u.step()
		}
		// What the call would do rides along for the client to draw
		// beside the approval; a known call's input is sent again with it
		// (in the step that showed it, so the client updates that part).
		chunk := chunkToolInput{Type: "tool-input-available", ToolCallID: callID, ToolName: in.Tool, Input: argsValue(in.Arguments)}
		if in.Preview != nil {
			chunk.ProviderMetadata = map[string]map[string]any{"cairn": {"preview": in.Preview}}
		}
		u.send(chunk)
	}
	u.send(chunkApproval{Type: "tool-approval-request", ApprovalID: in.ID, ToolCallID: callID})
}

func (u *uiStream) result(callID, content string, isError, denied bool) {
	switch {
	case denied:
		u.send(chunkToolDenied{Type: "tool-output-denied", ToolCallID: callID})
	case isError:
		u.send(chunkToolError{Type: "tool-output-error", ToolCallID: callID, ErrorText: content})
	default:
		u.send(chunkToolOutput{Type: "tool-output-available", ToolCallID: callID, Output: content})
	}
}

// end closes the message: the turn's outcome, then [DONE].
func (u *uiStream) end(sess *cairn.Session, err error) {
	u.lock()
	defer u.unlock()
	u.closeText()
	if u.inStep {
		u.send(chunkType{Type: "finish-step"})
	}
	switch {
	case err != nil:
		u.send(chunkError{Type: "error", ErrorText: err.Error()})
	case sess.Status == cairn.StatusFailed && sess.Error != nil:
		u.send(chunkError{Type: "error", ErrorText: sess.Error.Message})
	case sess.Status == cairn.StatusPaused:
		u.send(chunkFinish{Type: "finish", FinishReason: "tool-calls"})
	default:
		u.send(chunkFinish{Type: "finish", FinishReason: "stop"})
	}
	u.raw([]byte("[DONE]"))
}

// chatStream resumes the stream of a turn in progress: 204 when none runs.
func (s *Server) chatStream(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.ownSession(w, r)
	if !ok {
		return
	}
	if sess.Agent != r.PathValue("agent") {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("chat %s belongs to agent %s", sess.ID, sess.Agent))
		return
	}
	if sess.Status != cairn.StatusRunning {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	st, release, ok := s.openUIStream(w, sess.ID)
	if !ok {
		return
	}
	defer release()
	st.send(chunkStart{Type: "start"})
	// Replay the running turn from its start, then follow it.
	evs, err := s.runner.Events(r.Context(), sess.ID, 0)
	if err != nil {
		st.end(nil, err)
		return
	}
	turnStart := 0
	for i, ev := range evs {
		if turnEnded(ev.Type) {
			turnStart = i + 1
		}
	}
	st.learn(evs[:turnStart])
	if len(evs) > 0 && turnStart == len(evs) { // it ended since the status was read
		now, err := s.runner.Session(r.Context(), sess.ID)
		st.end(now, err)
		return
	}
	after := int64(0)
	for _, ev := range evs[turnStart:] {
		st.observe(ev)
	}
	if len(evs) > 0 {
		after = evs[len(evs)-1].Seq
	}
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	// A reader: when the server stops, the turn goes on and the client
	// resumes elsewhere.
	go func() {
		select {
		case <-s.stopping:
			stop()
		case <-ctx.Done():
		}
	}()
	for ev, err := range s.runner.Follow(ctx, sess.ID, after) {
		if err != nil {
			return
		}
		st.observe(ev)
		if turnEnded(ev.Type) {
			now, err := s.runner.Session(context.WithoutCancel(ctx), sess.ID)
			st.end(now, err)
			return
		}
	}
}

// turnEnded reports whether an event of this type ends a turn.
func turnEnded(typ session.EventType) bool {
	// A filter of event types: only the events that end a turn.
	//exhaustive:ignore
	switch typ {
	case session.EventTurnPaused, session.EventTurnCompleted, session.EventTurnFailed, session.EventTurnCancelled:
		return true
	}
	return false
}
