// Package mcpserver serves Cairn agents as MCP tools (the server side of
// the Model Context Protocol): a tool call runs a turn, a pause asks the
// MCP client with elicitation, and a resume tool continues a session (see
// docs/mcp.md). Package mcptools is the other way round: the tools of MCP
// servers for Cairn agents.
package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/session"
)

// Caller is who calls a tool of Cairn's MCP server.
type Caller struct {
	// Name owns the sessions the caller starts and is the actor of its
	// decisions; Role is recorded with them.
	Name, Role string
	// MayDecide: the caller may approve, reject and answer. A caller that
	// may not gets the paused result; someone who may decides elsewhere.
	MayDecide bool
	// Actor is who the caller is to the runner's decision point and the
	// audit trail; zero: {Name, Role} (the person who started the process
	// over stdio, trusted).
	Actor cairn.Actor
	// MaySee reports whether the caller may resume a session (cairn_resume).
	MaySee func(*cairn.Session) bool
}

// Options are the optional settings of New; nil means the
// defaults.
type Options struct {
	// Caller says who calls, from the request (its TokenInfo over HTTP);
	// nil: everyone may decide everything (stdio, the person who started
	// the process).
	Caller func(*sdk.RequestExtra) Caller
	// Inbox returns where a person decides on a paused session (the web
	// page); nil or "": no link.
	Inbox func(sessionID string) string
	// Logger; nil: slog.Default().
	Logger *slog.Logger
}

// ResumeTool is the name of the tool that decides on a paused run, for
// clients that cannot answer elicitations.
const ResumeTool = "cairn_resume"

// maxAsks bounds how often one pause is asked again after a refused answer.
const maxAsks = 3

// New serves the runner's agents as MCP tools: each agent is a tool
// taking {"input": string} and giving the agent's output. When a run
// pauses, the server asks the client with elicitation (see docs/mcp.md);
// a client without elicitation gets a result that says the run is paused,
// and decides later with the cairn_resume tool.
func New(r *cairn.Runner, opts *Options) *sdk.Server {
	if opts == nil {
		opts = &Options{}
	}
	s := &server{r: r, opts: *opts}
	if s.opts.Logger == nil {
		s.opts.Logger = slog.Default()
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "cairn", Version: "1"}, nil)
	for _, a := range r.Agents() {
		if a.Direct {
			continue // it takes calls, not messages: the gateway's to offer
		}
		name := a.Name
		sdk.AddTool(srv, &sdk.Tool{Name: name, Description: agentDescription(a)},
			func(ctx context.Context, req *sdk.CallToolRequest, in agentInput) (*sdk.CallToolResult, any, error) {
				return s.run(ctx, req, name, in.Input)
			})
	}
	sdk.AddTool(srv, &sdk.Tool{Name: ResumeTool, Description: "Decide on a paused Cairn run: approve, reject or answer its pending interrupts " +
		"(decisions), or reply to an agent that waits for a message (message). Takes the session_id from the paused result; gives the run's output, or says it paused again."},
		func(ctx context.Context, req *sdk.CallToolRequest, in resumeInput) (*sdk.CallToolResult, any, error) {
			return s.resume(ctx, req, in)
		})
	return srv
}

type server struct {
	r    *cairn.Runner
	opts Options
}

type agentInput struct {
	Input string `json:"input" jsonschema:"the message for the agent"`
}

// resumeInput is cairn_resume's argument.
type resumeInput struct {
	SessionID string           `json:"session_id" jsonschema:"the paused session (from the paused result)"`
	Decisions []resumeDecision `json:"decisions,omitempty" jsonschema:"one per pending approval or question"`
	Message   string           `json:"message,omitempty" jsonschema:"the user's reply, when an agent waits for a message"`
}

type resumeDecision struct {
	InterruptID string         `json:"interrupt_id" jsonschema:"the interrupt's id"`
	Action      string         `json:"action" jsonschema:"approve or reject (an approval), answer or reject (a question), complete or fail (a call the client runs, or one waiting on a system)"`
	Arguments   map[string]any `json:"arguments,omitempty" jsonschema:"on approve: other arguments to run the tool with"`
	Reason      string         `json:"reason,omitempty" jsonschema:"on reject: told to the model"`
	Text        string         `json:"text,omitempty" jsonschema:"on answer: the answer to a question"`
	Content     map[string]any `json:"content,omitempty" jsonschema:"on answer: the answer to a question with a schema"`
	Output      any            `json:"output,omitempty" jsonschema:"on complete: the call's result (matching its result_schema); on edit: the reviewed answer"`
}

func agentDescription(a cairn.AgentInfo) string {
	var tools []string
	for _, t := range a.Tools {
		tools = append(tools, t.Name)
	}
	d := fmt.Sprintf("Run the Cairn agent %q with a message and get its answer. People may be asked to approve its actions on the way.", a.Name)
	if len(tools) > 0 {
		d += " Its tools: " + strings.Join(tools, ", ") + "."
	}
	return d
}

// actor is who c is to the runner.
func (c Caller) actor() cairn.Actor {
	if c.Actor.IsZero() {
		return cairn.Actor{Name: c.Name, Role: c.Role}
	}
	return c.Actor
}

func (s *server) caller(req *sdk.CallToolRequest) Caller {
	if s.opts.Caller == nil {
		return Caller{Name: "mcp", Role: "mcp", MayDecide: true}
	}
	return s.opts.Caller(req.Extra)
}

func (s *server) run(ctx context.Context, req *sdk.CallToolRequest, agent, input string) (*sdk.CallToolResult, any, error) {
	c := s.caller(req)
	if req.Params.RequestState != "" {
		res, err := s.answered(ctx, req, c)
		return res, nil, err
	}
	// The run goes on if the client goes away: its pause waits for anyone.
	sess, err := s.r.Start(context.WithoutCancel(ctx), agent, input, &cairn.StartOptions{Owner: c.Name, Actor: c.actor()})
	if err != nil {
		return nil, nil, err
	}
	return s.respond(ctx, req, c, sess, ""), nil, nil
}

// respond gives the run's outcome, or asks about its pause: as input
// requests that the client answers by calling again (multi round-trip,
// protocol 2026-07-28), or by elicitation requests during this call (older
// clients).
func (s *server) respond(ctx context.Context, req *sdk.CallToolRequest, c Caller, sess *cairn.Session, refused string) *sdk.CallToolResult {
	if sess.Status != cairn.StatusPaused || !c.MayDecide || !canElicit(req) || !s.asksCaller(c, sess) {
		return s.outcome(sess)
	}
	if !multiRoundTrip(req) {
		return s.drive(ctx, req, c, sess, refused)
	}
	state, _ := json.Marshal(roundState{Session: sess.ID, Seq: sess.Seq})
	asks := sdk.InputRequestMap{}
	for _, in := range sess.Interrupts {
		if in.Kind.ForPerson() {
			asks[in.ID] = s.elicitation(sess, in, refused)
		}
	}
	return &sdk.CallToolResult{InputRequests: asks, RequestState: string(state)}
}

// roundState is what the client echoes with its answers (RequestState):
// which pause they answer. It is not trusted: the caller must be allowed to
// decide on the session, and a pause that moved on is asked afresh.
type roundState struct {
	Session string `json:"session"`
	Seq     int64  `json:"seq"`
}

func multiRoundTrip(req *sdk.CallToolRequest) bool {
	p := req.Session.InitializeParams()
	return p != nil && p.ProtocolVersion >= "2026-07-28"
}

// answered applies the answers of a multi round-trip retry to the pause
// they answer.
func (s *server) answered(ctx context.Context, req *sdk.CallToolRequest, c Caller) (*sdk.CallToolResult, error) {
	var st roundState
	if err := json.Unmarshal([]byte(req.Params.RequestState), &st); err != nil || st.Session == "" {
		return nil, fmt.Errorf("requestState is not one Cairn gave: %v", err)
	}
	sess, err := s.r.Session(ctx, st.Session)
	if err != nil {
		return nil, err
	}
	if c.MaySee != nil && !c.MaySee(sess) {
		return nil, notFound(sess.ID)
	}
	if sess.Seq != st.Seq || sess.Status != cairn.StatusPaused {
		return s.respond(ctx, req, c, sess, "the run moved on before your answer arrived"), nil
	}
	var ds []cairn.Decision
	var reply *string
	for _, in := range sess.Interrupts {
		if !in.Ask().Reply && !c.MayDecide {
			// Forged answers from a caller who may not decide change nothing.
			return nil, fmt.Errorf("deciding needs the approver role; %s has %s", c.Name, c.Role)
		}
		res, _ := req.Params.InputResponses[in.ID].(*sdk.ElicitResult)
		if res == nil || res.Action == "cancel" {
			return s.outcome(sess), nil // dismissed: the run stays paused
		}
		if in.Ask().Reply {
			if reply = messageReply(res); reply == nil {
				return s.outcome(sess), nil
			}
			break
		}
		ds = append(ds, decision(in, res))
	}
	next, err := s.apply(ctx, c, sess, ds, reply)
	if err != nil {
		return s.respond(ctx, req, c, sess, err.Error()), nil
	}
	return s.respond(ctx, req, c, next, ""), nil
}

// apply records decisions, or the reply to a waiting agent, as c.
func (s *server) apply(ctx context.Context, c Caller, sess *cairn.Session, ds []cairn.Decision, reply *string) (*cairn.Session, error) {
	opts := &cairn.TurnOptions{Actor: c.actor()}
	if reply != nil {
		return s.r.Send(context.WithoutCancel(ctx), sess.ID, *reply, sess.Seq, opts)
	}
	return s.r.Resume(context.WithoutCancel(ctx), sess.ID, sess.Seq, ds, opts)
}

func messageReply(res *sdk.ElicitResult) *string {
	text, _ := res.Content["reply"].(string)
	if res.Action != "accept" || text == "" {
		return nil
	}
	return &text
}

func (s *server) resume(ctx context.Context, req *sdk.CallToolRequest, in resumeInput) (*sdk.CallToolResult, any, error) {
	c := s.caller(req)
	if req.Params.RequestState != "" {
		res, err := s.answered(ctx, req, c)
		return res, nil, err
	}
	sess, err := s.r.Session(ctx, in.SessionID)
	if err != nil {
		return nil, nil, err
	}
	if c.MaySee != nil && !c.MaySee(sess) {
		return nil, nil, notFound(sess.ID)
	}
	turn := context.WithoutCancel(ctx)
	opts := &cairn.TurnOptions{Actor: c.actor()}
	switch {
	case in.Message != "" && len(in.Decisions) > 0:
		return nil, nil, errors.New("give decisions or a message, not both")
	case in.Message != "":
		sess, err = s.r.Send(turn, sess.ID, in.Message, sess.Seq, opts)
	case len(in.Decisions) > 0:
		if !c.MayDecide {
			return nil, nil, fmt.Errorf("deciding needs the approver role; %s has %s", c.Name, c.Role)
		}
		var ds []cairn.Decision
		for _, d := range in.Decisions {
			cd := cairn.Decision{InterruptID: d.InterruptID, Action: cairn.Action(d.Action), Reason: d.Reason, Text: d.Text}
			if d.Arguments != nil {
				cd.Arguments, _ = json.Marshal(d.Arguments)
			}
			if d.Content != nil {
				cd.Content, _ = json.Marshal(d.Content)
			}
			if d.Output != nil {
				cd.Output, _ = json.Marshal(d.Output)
			}
			ds = append(ds, cd)
		}
		sess, err = s.r.Resume(turn, sess.ID, sess.Seq, ds, opts)
	}
	if err != nil {
		return nil, nil, err
	}
	return s.respond(ctx, req, c, sess, ""), nil, nil
}

// drive asks the client about each pause of the run, as long as it can
// answer elicitations and the caller may decide, and gives the outcome.
func (s *server) drive(ctx context.Context, req *sdk.CallToolRequest, c Caller, sess *cairn.Session, refused string) *sdk.CallToolResult {
	for asks := 0; sess.Status == cairn.StatusPaused && s.asksCaller(c, sess) && asks < maxAsks; asks++ {
		decisions, reply, ok := s.ask(ctx, req, sess, refused)
		if !ok {
			break // the user dismissed the question: the run stays paused
		}
		next, err := s.apply(ctx, c, sess, decisions, reply)
		if err != nil {
			// Refused (arguments that do not fit, a stale pause): nothing
			// changed; ask again with the reason, from the current state.
			refused = err.Error()
			if next, err = s.r.Session(ctx, sess.ID); err != nil {
				return errorResult(err.Error())
			}
		} else {
			refused, asks = "", -1
		}
		sess = next
	}
	return s.outcome(sess)
}

// asksCaller reports whether the run waits for a person and c is one who
// decides what it waits for (the runner's decision point: an approver
// outside a call's approver groups gets the paused result, not a form).
func (s *server) asksCaller(c Caller, sess *cairn.Session) bool {
	return slices.ContainsFunc(sess.Interrupts, func(in cairn.Interrupt) bool {
		return in.Kind.ForPerson() && s.r.Decides(c.actor(), sess.Owner, &in)
	})
}

func canElicit(req *sdk.CallToolRequest) bool {
	p := req.Session.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// ask puts the session's pending interrupts to the client, one
// elicitation each, and returns the decisions, or the reply to an agent
// waiting for a message; ok is false when the user cancelled.
func (s *server) ask(ctx context.Context, req *sdk.CallToolRequest, sess *cairn.Session, refused string) (ds []cairn.Decision, reply *string, ok bool) {
	for _, in := range sess.Interrupts {
		if !in.Kind.ForPerson() {
			continue // completed by the client (cairn_resume) or the system it waits on
		}
		params := s.elicitation(sess, in, refused)
		res, err := req.Session.Elicit(ctx, params)
		if err != nil || res.Action == "cancel" {
			if err != nil {
				s.opts.Logger.Warn("mcp client did not answer an elicitation", "session", sess.ID, "err", err)
			}
			return nil, nil, false
		}
		if in.Ask().Reply {
			reply := messageReply(res)
			return nil, reply, reply != nil
		}
		ds = append(ds, decision(in, res))
	}
	return ds, nil, true
}

// elicitation is the form for one interrupt, drawn from its Ask: a reply
// box for an agent waiting for the user, a question's own form or its URL,
// and otherwise a choice of action with a field for each value a choice
// takes (a reason, edited arguments or an answer as JSON).
func (s *server) elicitation(sess *cairn.Session, in cairn.Interrupt, refused string) *sdk.ElicitParams {
	ask := in.Ask()
	var b strings.Builder
	if refused != "" {
		fmt.Fprintf(&b, "That answer was refused: %s\n\n", refused)
	}
	for _, p := range in.Path {
		fmt.Fprintf(&b, "%s › ", p.Agent)
	}
	b.WriteString(ask.Text)
	if len(in.Output) > 0 {
		fmt.Fprintf(&b, "\n%s", in.Output) // what a review is about; arguments are in the text and the form
	}
	if pv := in.Preview; pv != nil {
		// What the call would do (its tool's dry run), as text: a client
		// shows the message as it is.
		head, rest := session.Fold(pv.Text(), maxPreviewChars)
		fmt.Fprintf(&b, "\n\nPreview (%s):\n%s", cmp.Or(string(pv.Format), "failed"), head)
		if rest != "" {
			fmt.Fprintf(&b, "\n… (%d more characters: the inbox shows it whole)", utf8.RuneCountInString(rest))
		}
	}
	if ask.Warning != "" {
		fmt.Fprintf(&b, "\n\n%s", ask.Warning)
	}
	str := func(title, desc string) map[string]any {
		return map[string]any{"type": "string", "title": title, "description": desc}
	}
	p := &sdk.ElicitParams{}
	first := ask.First()
	switch {
	case ask.Reply:
		p.RequestedSchema = map[string]any{"type": "object", "required": []string{"reply"},
			"properties": map[string]any{"reply": str("Reply", "Your reply to "+ask.Subject)}}
	case ask.Link != "" && first.Field == "":
		// Accept says it is done; decline refuses.
		p.Mode, p.URL, p.ElicitationID = "url", ask.Link, in.ID
	case first.Field == session.FieldContent && len(first.Schema) > 0:
		// The question's own form; decline refuses.
		p.RequestedSchema = first.Schema
	default:
		var actions []any
		props := map[string]any{}
		for _, c := range ask.Choices {
			actions = append(actions, map[string]any{"const": string(c.Action), "title": c.Label})
			if c.Field == "" || props[string(c.Field)] != nil {
				continue
			}
			title, desc := fieldTitle(c.Field), "For "+c.Label
			if c.Field.JSON() {
				title += " (JSON)"
				desc += "; it must match its schema"
			}
			field := str(title, desc)
			if len(c.Default) > 0 {
				field["default"] = string(c.Default)
			}
			props[string(c.Field)] = field
		}
		props["action"] = map[string]any{"type": "string", "title": "Decision", "oneOf": actions, "default": string(first.Action)}
		p.RequestedSchema = map[string]any{"type": "object", "required": []string{"action"}, "properties": props}
	}
	if link := s.inbox(sess.ID); link != "" {
		fmt.Fprintf(&b, "\n\n(session %s; also in the inbox: %s)", sess.ID, link)
	}
	p.Message = b.String()
	return p
}

// maxPreviewChars is how much of a preview an elicitation's message shows.
const maxPreviewChars = 4000

// fieldTitle is a form field's title.
func fieldTitle(f session.Field) string {
	return strings.ToUpper(string(f[:1])) + string(f[1:])
}

// decision is the client's answer to one interrupt's elicitation: the
// action it chose, with the value of that action's field. A declined form
// rejects (or fails) with the reason "declined in the MCP client"; a value
// the choice cannot take rejects with why, so the model hears it.
func decision(in cairn.Interrupt, res *sdk.ElicitResult) cairn.Decision {
	ask := in.Ask()
	declined := cairn.Decision{InterruptID: in.ID, Action: cairn.ActionReject, Reason: "declined in the MCP client"}
	if _, ok := ask.Choice(cairn.ActionReject); !ok {
		declined.Action = cairn.ActionFail
	}
	if res.Action != "accept" {
		return declined
	}
	first := ask.First()
	action, value := first.Action, ""
	switch {
	case ask.Link != "" && first.Field == "":
	case first.Field == session.FieldContent && len(first.Schema) > 0:
		b, _ := json.Marshal(res.Content)
		value = string(b)
	default:
		if a, _ := res.Content["action"].(string); a != "" {
			action = cairn.Action(a)
		}
		c, _ := ask.Choice(action)
		if c.Field != "" {
			value, _ = res.Content[string(c.Field)].(string)
			if c.Optional && len(c.Default) > 0 && sameJSON(value, string(c.Default)) {
				value = "" // left as offered
			}
		}
	}
	d, err := in.Choose(action, value)
	if err != nil {
		declined.Reason = "the MCP client's answer was refused: " + err.Error()
		return declined
	}
	return d
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

func (s *server) inbox(id string) string {
	if s.opts.Inbox == nil {
		return ""
	}
	return s.opts.Inbox(id)
}

// outcome is the tool result for the run as it stands.
func (s *server) outcome(sess *cairn.Session) *sdk.CallToolResult {
	switch sess.Status {
	case cairn.StatusCompleted:
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: sess.Output}}}
	case cairn.StatusPaused:
		var b strings.Builder
		fmt.Fprintf(&b, "The run is paused: session %s waits.", sess.ID)
		for _, in := range sess.Interrupts {
			ask := in.Ask()
			fmt.Fprintf(&b, "\n- %s %s: %s: %s", in.Kind, in.ID, ask.Subject, ask.Text)
			if len(in.Output) > 0 {
				fmt.Fprintf(&b, " %s", in.Output)
			}
			if !ask.Reply {
				fmt.Fprintf(&b, " (%s)", choiceList(ask))
			}
		}
		if link := s.inbox(sess.ID); link != "" {
			fmt.Fprintf(&b, "\nDecide in the inbox: %s", link)
		}
		fmt.Fprintf(&b, "\nOr call %s with session_id %q and decisions (or a message).", ResumeTool, sess.ID)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: b.String()}},
			StructuredContent: map[string]any{"session_id": sess.ID, "status": sess.Status, "seq": sess.Seq, "interrupts": sess.Interrupts, "inbox": s.inbox(sess.ID)}}
	case cairn.StatusFailed:
		msg := "the run failed"
		if sess.Error != nil {
			msg += ": " + sess.Error.Message
		}
		return errorResult(msg)
	case cairn.StatusRunning, cairn.StatusCancelled: // said as it is, below
	}
	return errorResult(fmt.Sprintf("the run is %s", sess.Status))
}

func errorResult(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}
}

// choiceList names what an interrupt takes, for a result the model reads:
// "approve [arguments] | reject [reason]".
func choiceList(ask session.Ask) string {
	var parts []string
	for _, c := range ask.Choices {
		part := string(c.Action)
		switch {
		case c.Field != "" && c.Optional:
			part += " [" + string(c.Field) + "]"
		case c.Field != "":
			part += " with " + string(c.Field)
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, " | ")
}

// notFound is the error of a session the caller may not see (another
// user's, another tenant's): the runner's own for an unknown id, so that
// ids cannot be probed.
func notFound(id string) error {
	return fmt.Errorf("no session %q: %w", id, cairn.ErrNotFound)
}
