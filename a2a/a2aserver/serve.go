// Package a2aserver serves Cairn agents over the Agent2Agent protocol
// (A2A 1.0, the official Go SDK's JSON-RPC binding): each agent has an
// agent card and an endpoint where a task is a session. A pause is the
// task state input-required, its status message carrying the interrupts
// and the session's seq; the caller's next message on the task decides
// (see docs/a2a.md). The runner decides who may decide, exactly as it does
// for every other door.
package a2aserver

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/session"
)

// Caller is who calls an A2A endpoint.
type Caller struct {
	// Name owns the tasks the caller starts; Actor is who it is to the
	// runner's decision point and the audit trail (zero: {Name}).
	Name  string
	Actor cairn.Actor
	// MaySee reports whether the caller may read a task's session (and
	// so ask to decide on it); nil: every session.
	MaySee func(*cairn.Session) bool
	// MaySpeak reports whether the caller may send a session a message or
	// cancel it; nil: every session it may see.
	MaySpeak func(*cairn.Session) bool
}

// Options are the optional settings of New; nil means the defaults.
type Options struct {
	// Caller says who calls, from the request's context; nil: one caller
	// named "a2a" who may do everything (a server on loopback).
	Caller func(context.Context) Caller
	// URL is the endpoint's absolute URL, for the agent card; nil: the
	// request's host and path (http).
	URL func(*http.Request) string
	// Description is the agent card's description; "": one made from the
	// agent's tools.
	Description string
	// Security is the card's security schemes, each a way in (a
	// requirement of its own: a call needs one); nil: none.
	Security a2a.NamedSecuritySchemes
	// Logger; nil: slog.Default().
	Logger *slog.Logger
}

// CardPath is where the agent card is served, below the endpoint.
const CardPath = "/.well-known/agent-card.json"

// contextKey is the session metadata key holding the task's A2A context id.
const contextKey = "a2a_context_id"

// New serves the runner's agent over A2A: a GET of a path ending in
// CardPath answers its agent card, a POST its JSON-RPC binding (send,
// stream, get, cancel, subscribe). Mount it at the endpoint and at the
// endpoint + CardPath.
func New(r *cairn.Runner, agent string, opts *Options) (http.Handler, error) {
	if opts == nil {
		opts = &Options{}
	}
	h := &handler{r: r, agent: agent, opts: *opts}
	if h.opts.Logger == nil {
		h.opts.Logger = slog.Default()
	}
	found := false
	for _, a := range r.Agents() {
		if a.Name == agent {
			found, h.info = true, a
		}
	}
	if !found {
		return nil, fmt.Errorf("a2a: no agent %q: serve one of the runner's agents", agent)
	}
	if h.info.Direct {
		return nil, fmt.Errorf("a2a: agent %q is direct (it takes calls, not messages): it cannot be served over A2A", agent)
	}
	rpc := a2asrv.NewJSONRPCHandler(h, a2asrv.WithTransportPanicHandler(func(p any) error {
		h.opts.Logger.Error("a2a: request panicked", "agent", agent, "panic", p)
		return a2a.ErrInternalError
	}))
	card := a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(func(ctx context.Context) (*a2a.AgentCard, error) {
		req, _ := ctx.Value(requestKey{}).(*http.Request)
		return h.card(req), nil
	}))
	card = withRequest(card)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch {
		case strings.HasSuffix(req.URL.Path, CardPath) && (req.Method == http.MethodGet || req.Method == http.MethodOptions):
			card.ServeHTTP(w, req)
		case req.Method == http.MethodPost:
			rpc.ServeHTTP(w, req)
		default:
			w.Header().Set("Allow", "POST")
			http.Error(w, "an A2A endpoint takes JSON-RPC requests (POST); its agent card is at ."+CardPath, http.StatusMethodNotAllowed)
		}
	}), nil
}

type requestKey struct{}

// withRequest puts the request in its context, for the card's URL.
func withRequest(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, r)))
	})
}

type handler struct {
	r     *cairn.Runner
	agent string
	info  cairn.AgentInfo
	opts  Options
}

var _ a2asrv.RequestHandler = (*handler)(nil)

// card is the agent's card as the caller of req reaches it.
func (h *handler) card(req *http.Request) *a2a.AgentCard {
	url := ""
	switch {
	case h.opts.URL != nil && req != nil:
		url = h.opts.URL(req)
	case req != nil:
		path, _, _ := strings.Cut(req.RequestURI, "?")
		url = "http://" + req.Host + strings.TrimSuffix(path, CardPath)
	}
	info := h.current()
	skills := make([]a2a.AgentSkill, 0, len(info.Tools)+1)
	skills = append(skills, a2a.AgentSkill{ID: h.agent, Name: h.agent, Description: h.description(info), Tags: []string{"cairn", "human-in-the-loop"}})
	for _, t := range info.Tools {
		skills = append(skills, a2a.AgentSkill{ID: h.agent + "." + t.Name, Name: t.Name, Description: cmp.Or(t.Description, t.Name), Tags: []string{"tool"}})
	}
	c := &a2a.AgentCard{
		Name:                h.agent,
		Description:         h.description(info),
		Version:             "1",
		SupportedInterfaces: []*a2a.AgentInterface{{URL: url, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version}},
		Capabilities:        a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:   []string{"text/plain", "application/json"},
		DefaultOutputModes:  []string{"text/plain", "application/json"},
		Skills:              skills,
		SecuritySchemes:     h.opts.Security,
	}
	for _, name := range slices.Sorted(maps.Keys(h.opts.Security)) {
		c.SecurityRequirements = append(c.SecurityRequirements, a2a.SecurityRequirements{name: {}})
	}
	return c
}

// current is the agent as the runner has it now: its tools change with
// its toolsets (an MCP server's list).
func (h *handler) current() cairn.AgentInfo {
	for _, a := range h.r.Agents() {
		if a.Name == h.agent {
			return a
		}
	}
	return h.info
}

func (h *handler) description(info cairn.AgentInfo) string {
	if h.opts.Description != "" {
		return h.opts.Description
	}
	d := fmt.Sprintf("The Cairn agent %q. People may be asked to approve its actions: a task then turns input-required, "+
		"its status message listing the interrupts and the seq; answer with a data part {\"decisions\": […], \"seq\": N}.", h.agent)
	if len(info.Tools) > 0 {
		names := make([]string, len(info.Tools))
		for i, t := range info.Tools {
			names[i] = t.Name
		}
		d += " Its tools: " + strings.Join(names, ", ") + "."
	}
	return d
}

func (h *handler) caller(ctx context.Context) Caller {
	if h.opts.Caller == nil {
		return Caller{Name: "a2a"}
	}
	return h.opts.Caller(ctx)
}

func (c Caller) actor() cairn.Actor {
	if c.Actor.IsZero() {
		return cairn.Actor{Name: c.Name}
	}
	return c.Actor
}

func (c Caller) maySee(s *cairn.Session) bool { return c.MaySee == nil || c.MaySee(s) }

func (c Caller) maySpeak(s *cairn.Session) bool {
	return c.maySee(s) && (c.MaySpeak == nil || c.MaySpeak(s))
}

// session reads the task's session as c may see it: another agent's
// session, or one c may not see, is not found, so ids cannot be probed.
func (h *handler) session(ctx context.Context, c Caller, id a2a.TaskID) (*cairn.Session, error) {
	if id == "" {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "the task id is required")
	}
	sess, err := h.r.Session(ctx, string(id))
	if err == nil && (sess.Agent != h.agent || !c.maySee(sess)) {
		err = cairn.ErrNotFound
	}
	if err != nil {
		return nil, h.fail(err, fmt.Sprintf("task %s", id))
	}
	return sess, nil
}

// GetTask answers the task as its session stands.
func (h *handler) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	c := h.caller(ctx)
	sess, err := h.session(ctx, c, req.ID)
	if err != nil {
		return nil, err
	}
	return h.task(c, sess), nil
}

// ListTasks is not offered: the REST API lists sessions (GET /v1/sessions).
func (h *handler) ListTasks(context.Context, *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "listing tasks is not offered over A2A: list sessions with GET /v1/sessions?agent="+h.agent)
}

// CancelTask cancels the session (and the sub-agents it waits on).
func (h *handler) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	c := h.caller(ctx)
	sess, err := h.session(ctx, c, req.ID)
	if err != nil {
		return nil, err
	}
	if state(sess).Terminal() {
		return nil, a2a.NewError(a2a.ErrTaskNotCancelable, fmt.Sprintf("task %s is %s: only a working or input-required task can be canceled", sess.ID, sess.Status))
	}
	if !c.maySpeak(sess) {
		return nil, a2a.NewError(a2a.ErrUnauthorized, fmt.Sprintf("task %s belongs to another user: only its owner or an admin cancels it", sess.ID))
	}
	out, err := h.r.Cancel(context.WithoutCancel(ctx), sess.ID, cairn.CancelAll, &cairn.TurnOptions{Actor: c.actor()})
	if err != nil {
		return nil, h.fail(err, "cancel")
	}
	return h.task(c, out), nil
}

// SendMessage starts a task, or goes on with one (a decision, an answer),
// and answers the task once its turn stopped: completed, input-required,
// failed or canceled.
func (h *handler) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	c := h.caller(ctx)
	m, err := h.read(ctx, c, req)
	if err != nil {
		return nil, err
	}
	sess, err := h.run(ctx, c, m, nil)
	if err != nil {
		return nil, err
	}
	return h.task(c, sess), nil
}

// SendStreamingMessage is SendMessage as a stream: the task, its status as
// each tool starts, then its artifact and its final status.
func (h *handler) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		c := h.caller(ctx)
		m, err := h.read(ctx, c, req)
		if err != nil {
			yield(nil, err)
			return
		}
		task := &a2a.Task{ID: m.id, ContextID: m.contextID, Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
		if !yield(task, nil) {
			return
		}
		open := true // the client still reads; the turn goes on either way
		sess, err := h.run(ctx, c, m, func(ev cairn.Event) {
			if e := progress(task, ev); open && e != nil {
				open = yield(e, nil)
			}
		})
		if !open {
			return
		}
		if err != nil {
			yield(nil, err)
			return
		}
		for _, e := range h.final(h.task(c, sess)) {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// SubscribeToTask streams the task from now on: its state now, then each
// change, until it stops (completed, input-required, failed, canceled).
func (h *handler) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		c := h.caller(ctx)
		sess, err := h.session(ctx, c, req.ID)
		if err != nil {
			yield(nil, err)
			return
		}
		task := h.task(c, sess)
		if !yield(task, nil) || state(sess) != a2a.TaskStateWorking {
			return
		}
		for ev, err := range h.r.Follow(ctx, sess.ID, sess.Seq) {
			if err != nil {
				yield(nil, h.fail(err, "subscribe"))
				return
			}
			if e := progress(task, ev); e != nil && !yield(e, nil) {
				return
			}
			if !turnEnded(ev.Type) {
				continue
			}
			now, err := h.session(ctx, c, req.ID)
			if err != nil {
				yield(nil, err)
				return
			}
			if state(now) == a2a.TaskStateWorking {
				continue // a turn of a sub-agent ended, or a wait on a system began
			}
			for _, e := range h.final(h.task(c, now)) {
				if !yield(e, nil) {
					return
				}
			}
			return
		}
	}
}

// Push notifications are not offered: webhooks are Cairn's (docs/webhooks.md).

// GetTaskPushConfig implements a2asrv.RequestHandler: not offered.
func (h *handler) GetTaskPushConfig(context.Context, *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

// ListTaskPushConfigs implements a2asrv.RequestHandler: not offered.
func (h *handler) ListTaskPushConfigs(context.Context, *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

// CreateTaskPushConfig implements a2asrv.RequestHandler: not offered.
func (h *handler) CreateTaskPushConfig(context.Context, *a2a.PushConfig) (*a2a.PushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

// DeleteTaskPushConfig implements a2asrv.RequestHandler: not offered.
func (h *handler) DeleteTaskPushConfig(context.Context, *a2a.DeleteTaskPushConfigRequest) error {
	return a2a.ErrPushNotificationNotSupported
}

// GetExtendedAgentCard implements a2asrv.RequestHandler: there is none.
func (h *handler) GetExtendedAgentCard(context.Context, *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	return nil, a2a.ErrExtendedCardNotConfigured
}

// fail is err as an A2A error: the runner's refusals keep their message
// and their Cairn code (details.cairn_code), so a caller tells a stale seq
// from a decision made twice.
func (h *handler) fail(err error, what string) error {
	code := cairn.ErrorCode(err)
	var base error
	switch session.Code(code).HTTPStatus() {
	case http.StatusNotFound:
		base = a2a.ErrTaskNotFound
	case http.StatusForbidden:
		base = a2a.ErrUnauthorized
	case http.StatusBadRequest, http.StatusConflict, http.StatusGone, http.StatusUnprocessableEntity:
		base = a2a.ErrInvalidParams
	case 0:
		h.opts.Logger.Error("a2a: request failed", "agent", h.agent, "what", what, "err", err)
		return a2a.NewError(a2a.ErrInternalError, what+": the server could not complete the request")
	default:
		base = a2a.ErrInternalError
	}
	return a2a.NewError(base, err.Error()).WithDetails(map[string]any{"cairn_code": code})
}

// errParams is a refused message: what is wrong and how to send it.
func errParams(format string, args ...any) error {
	return a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf(format, args...))
}
