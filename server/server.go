// Package server is Cairn's HTTP API (docs/http-api.md): sessions,
// decisions, the approval inbox and event streams (JSON and Server-Sent
// Events) over a cairn.Runner.
package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/metric"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/continuation"
	"github.com/cairnhq/cairn/internal/suggest"
	"github.com/cairnhq/cairn/mcp/mcpserver"
	"github.com/cairnhq/cairn/session"
)

// Server serves the HTTP API. It is an http.Handler.
type Server struct {
	runner  *cairn.Runner
	log     *slog.Logger
	mux     *http.ServeMux
	handler http.Handler
	tokens  []Token
	oidc    *oidcVerifier // nil: no OpenID Provider
	// heartbeat is the interval of SSE keep-alive comments.
	heartbeat time.Duration
	// streamIdle ends an event stream that delivered no event for so long.
	streamIdle time.Duration
	streams    streams
	// stopping is closed by CloseStreams: event streams end at once.
	stopping  chan struct{}
	closeOnce sync.Once
	// readTimeout and writeTimeout are HTTPServer's (tests shorten them).
	readTimeout, writeTimeout time.Duration
	// openapi is the OpenAPI document, built on first request.
	openapiOnce sync.Once
	openapi     []byte
	openapiErr  error
	// web holds the page's files, read once.
	webOnce sync.Once
	web     map[string]asset
	baseURL string
	// sse holds the SSE messages of recorded events, encoded once.
	sse     sseCache
	metrics http.Handler
}

// Options configures a Server.
type Options struct {
	// Logger receives request errors; nil means slog.Default().
	Logger *slog.Logger
	// Tokens are the accepted bearer tokens. Empty means no authentication:
	// every caller is an anonymous admin (serve on loopback only).
	Tokens []Token
	// MaxStreamsPerSession and MaxStreams bound the open event streams (SSE)
	// on one session and in all; past them a new stream gets 429. 0 means
	// DefaultMaxStreamsPerSession and DefaultMaxStreams.
	MaxStreamsPerSession, MaxStreams int
	// StreamIdle ends an event stream that delivered no event for so long
	// (heartbeats do not count; the client reconnects with Last-Event-ID).
	// 0 means DefaultStreamIdle.
	StreamIdle time.Duration
	// BaseURL is where people reach this server (http://host:port), for
	// the inbox links it hands out (over MCP); empty: no links.
	BaseURL string
	// Metrics, when set, answers GET /metrics (a Prometheus handler; with
	// Tokens, an admin token is needed). Nil: 404.
	Metrics http.Handler
	// Profiling serves net/http/pprof at /debug/pprof/ to admins (with
	// Tokens, an admin token): CPU and heap profiles of the running server
	// (docs/operations.md). cairn serve turns it on.
	Profiling bool
	// MeterProvider, when set, receives the server's own metric:
	// cairn.sse.streams, the open event streams.
	MeterProvider metric.MeterProvider
	// AllowedHosts are Host names the server answers to without Tokens,
	// besides loopback addresses, localhost and BaseURL's host; any other
	// Host gets 421 (a DNS-rebinding page names its own host). With Tokens
	// every Host is answered.
	AllowedHosts []string
	// AllowedOrigins are web origins (scheme://host[:port]) besides the
	// server's own from which a browser may send state-changing requests;
	// any other origin gets 403 forbidden_origin.
	AllowedOrigins []string
	// OIDC, when set, accepts bearer JWTs from an OpenID Provider besides
	// Tokens (either one turns authentication on).
	OIDC *OIDC
	// Gateway, when set, serves the MCP approval gateway at /mcp/gateway
	// (its Caller and Inbox are the server's: the same tokens, the page).
	Gateway *mcpserver.GatewayOptions
	// A2A names the agents served over the Agent2Agent protocol: each at
	// /a2a/{agent} (JSON-RPC) with its card at
	// /a2a/{agent}/.well-known/agent-card.json (docs/a2a.md).
	A2A []string
}

// New returns a server for runner. opts may be nil.
func New(runner *cairn.Runner, opts *Options) *Server {
	if opts == nil {
		opts = &Options{}
	}
	s := &Server{runner: runner, log: opts.Logger, mux: http.NewServeMux(), heartbeat: 15 * time.Second, tokens: opts.Tokens,
		readTimeout: ReadTimeout, writeTimeout: WriteTimeout, baseURL: opts.BaseURL, metrics: opts.Metrics, stopping: make(chan struct{}),
		oidc: newOIDCVerifier(opts.OIDC)}
	if s.log == nil {
		s.log = slog.Default()
	}
	if opts.MeterProvider != nil {
		_, err := opts.MeterProvider.Meter("github.com/cairnhq/cairn/server").Int64ObservableGauge("cairn.sse.streams",
			metric.WithDescription("Open event streams (SSE) of this server: per session and the cross-session feed."),
			metric.WithInt64Callback(func(ctx context.Context, o metric.Int64Observer) error {
				s.streams.mu.Lock()
				defer s.streams.mu.Unlock()
				o.Observe(int64(s.streams.total))
				return nil
			}))
		if err != nil {
			s.log.Error("metrics: cairn.sse.streams", "err", err)
		}
	}
	s.streams.maxPer, s.streams.maxTotal, s.streamIdle = opts.MaxStreamsPerSession, opts.MaxStreams, opts.StreamIdle
	if s.streams.maxPer <= 0 {
		s.streams.maxPer = DefaultMaxStreamsPerSession
	}
	if s.streams.maxTotal <= 0 {
		s.streams.maxTotal = DefaultMaxStreams
	}
	if s.streamIdle <= 0 {
		s.streamIdle = DefaultStreamIdle
	}
	s.mux.HandleFunc("POST /v1/sessions", s.createSession)
	s.mux.HandleFunc("GET /v1/sessions", s.listSessions)
	s.mux.HandleFunc("GET /v1/sessions/{id}", s.getSession)
	s.mux.HandleFunc("POST /v1/sessions/{id}/messages", s.postMessage)
	s.mux.HandleFunc("POST /v1/sessions/{id}/decisions", s.postDecisions)
	s.mux.HandleFunc("POST /v1/sessions/{id}/cancel", s.postCancel)
	s.mux.HandleFunc("POST /v1/sessions/{id}/fork", s.postFork)
	s.mux.HandleFunc("POST /v1/sessions/{id}/interrupts/{interrupt_id}/preview", s.postPreview)
	s.mux.HandleFunc("GET /v1/sessions/{id}/events", s.getEvents)
	s.mux.HandleFunc("GET /v1/sessions/{id}/audit", s.getAudit)
	s.mux.HandleFunc("GET /v1/interrupts", s.listInterrupts)
	s.mux.HandleFunc("POST /v1/decisions", s.postBulkDecisions)
	s.mux.HandleFunc("GET /v1/rules", s.listRules)
	s.mux.HandleFunc("DELETE /v1/rules/{id}", s.revokeRule)
	s.mux.HandleFunc("GET /v1/analytics", s.analytics)
	s.mux.HandleFunc("POST /v1/approvals", s.createApproval)
	s.mux.HandleFunc("GET /v1/approvals/{id}", s.getApproval)
	s.mux.HandleFunc("POST /v1/approvals/{id}/result", s.postApprovalResult)
	s.mux.HandleFunc("POST /v1/agents/{agent}/invoke", s.invoke)
	s.mux.HandleFunc("GET /v1/agents", s.listAgents)
	s.mux.HandleFunc("POST /v1/agents/{agent}/chat", s.chat)
	s.mux.HandleFunc("GET /v1/agents/{agent}/chat/{id}/stream", s.chatStream)
	s.mux.HandleFunc("POST /v1/agents/{agent}/ag-ui", s.agui)
	s.mux.HandleFunc("GET /v1/actions/{token}", s.actionForm)
	s.mux.HandleFunc("POST /v1/actions/{token}", s.followAction)
	s.mux.HandleFunc("POST /v1/callbacks/{token}", s.callback)
	s.mux.HandleFunc("GET /v1/me", s.me)
	s.mux.HandleFunc("GET /auth/info", s.authInfo)
	s.mux.HandleFunc("GET /auth/login", s.withSignIn(s.signIn))
	s.mux.HandleFunc("GET /auth/callback", s.withSignIn(s.signInCallback))
	s.mux.HandleFunc("POST /auth/logout", s.withSignIn(s.signOut))
	s.mux.HandleFunc("GET /v1/events", s.streamChanges)
	s.mux.HandleFunc("GET /v1/openapi.json", s.serveOpenAPI)
	s.mux.HandleFunc("GET /{$}", s.serveIndex)
	s.mux.HandleFunc("GET /ui/{file}", s.serveUI)
	mcpHandler := s.mcpHandler()
	s.mux.Handle("POST /mcp", mcpHandler) // a tool call runs a turn: it is waited for
	s.mux.Handle("GET /mcp", s.endsOnStop(mcpHandler))
	s.mux.Handle("DELETE /mcp", mcpHandler)
	if len(opts.A2A) > 0 {
		a2a := s.a2aHandlers(opts.A2A)
		// With and without the slash: a client resolves the card's path
		// relative to the endpoint's URL (the JavaScript SDK needs the slash).
		s.mux.Handle("POST /a2a/{agent}", a2a) // a task's turn runs: it is waited for
		s.mux.Handle("POST /a2a/{agent}/{$}", a2a)
		s.mux.Handle("GET /a2a/{agent}/.well-known/agent-card.json", a2a)
	}
	if opts.Gateway != nil {
		gw := s.gatewayHandler(*opts.Gateway)
		s.mux.Handle("POST /mcp/gateway", gw) // a held call waits for a person
		s.mux.Handle("GET /mcp/gateway", s.endsOnStop(gw))
		s.mux.Handle("DELETE /mcp/gateway", gw)
	}
	s.mux.HandleFunc("GET /metrics", s.serveMetrics)
	if opts.Profiling {
		s.mux.HandleFunc("GET /debug/pprof/", s.profile)
	}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("/", s.noEndpoint)
	g, err := newGuard(opts)
	if err != nil {
		// Fail closed: the bad origin is simply not trusted.
		s.log.Error("server options", "err", err)
	}
	s.handler = g.wrap(s.authenticate(s.mux))
	return s
}

// serveMetrics answers the Prometheus scrape (Options.Metrics).
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if _, ok := require(w, r, RoleAdmin, "reading the metrics"); !ok {
		return
	}
	if s.metrics == nil {
		writeError(w, http.StatusNotFound, "not_found", "this server exports no metrics (cairn serve does; a library user sets server.Options.Metrics)")
		return
	}
	s.metrics.ServeHTTP(w, r)
}

// noEndpoint answers what no route matched: 405 with Allow when the path
// exists for other methods, else 404, both as JSON errors.
func (s *Server) noEndpoint(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s %s: this endpoint takes %s; see docs/http-api.md", r.Method, r.URL.Path, strings.Join(allow, ", ")))
		return
	}
	writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no endpoint %s %s; see docs/http-api.md", r.Method, r.URL.Path))
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// turnContext detaches a turn from the request: a client that disconnects
// does not cut a turn off between a tool's start and its result.
func turnContext(r *http.Request) context.Context { return context.WithoutCancel(r.Context()) }

type createRequest struct {
	Agent    string         `json:"agent"`
	Input    *string        `json:"input"`
	Metadata map[string]any `json:"metadata"`
	Wait     *bool          `json:"wait"`
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Agent == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", `"agent" is required: the name of a configured agent`)
		return
	}
	if req.Input == nil {
		writeError(w, http.StatusBadRequest, "invalid_request", `"input" is required: the user's first message`)
		return
	}
	detach := req.Wait != nil && !*req.Wait
	sess, err := s.runner.Start(turnContext(r), req.Agent, *req.Input, &cairn.StartOptions{Metadata: req.Metadata, Detach: detach, Owner: callerOf(r).name, Actor: actorOf(callerOf(r))})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, s.forCaller(callerOf(r), sess))
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	if sess, ok := s.ownSession(w, r); ok {
		writeJSON(w, http.StatusOK, s.forCaller(callerOf(r), sess))
	}
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	status := cairn.Status(r.URL.Query().Get("status"))
	switch status {
	case "", cairn.StatusRunning, cairn.StatusPaused, cairn.StatusCompleted, cairn.StatusFailed, cairn.StatusCancelled:
	default:
		writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("status %q is not one of running, paused, completed, failed, cancelled%s", status,
			suggest.Hint(string(status), []string{"running", "paused", "completed", "failed", "cancelled"})))
		return
	}
	page, ok := pageParams(w, r)
	if !ok {
		return
	}
	if page.Agent = r.URL.Query().Get("agent"); page.Agent != "" {
		if names := s.agentNames(); !slices.Contains(names, page.Agent) {
			writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("agent %q: no such agent; the agents are %s%s", page.Agent, strings.Join(names, ", "), suggest.Hint(page.Agent, names)))
			return
		}
	}
	p := callerOf(r)
	if !p.atLeast(RoleApprover) {
		page.Owner = p.name // a user's own sessions, read from the owner index
	}
	list, next, err := s.runner.SessionsPage(r.Context(), status, page)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	visible := list[:0]
	for _, sess := range list {
		if canSee(p, sess) {
			visible = append(visible, s.forCaller(p, previewSession(sess)))
		}
	}
	writeListing(w, r, map[string]any{"sessions": visible, "next_cursor": nextCursor(next)})
}

type messageRequest struct {
	Text *string `json:"text"`
	Seq  int64   `json:"seq"`
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	var req messageRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Text == nil {
		writeError(w, http.StatusBadRequest, "invalid_request", `"text" is required`)
		return
	}
	if !s.maySpeak(w, r, "posts messages") {
		return
	}
	sess, err := s.runner.Send(turnContext(r), r.PathValue("id"), *req.Text, req.Seq, decidedBy(callerOf(r)))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.forCaller(callerOf(r), sess))
}

type decisionsRequest struct {
	Seq       *int64           `json:"seq"`
	Decisions []cairn.Decision `json:"decisions"`
}

func (s *Server) postDecisions(w http.ResponseWriter, r *http.Request) {
	p := callerOf(r)
	var req decisionsRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Seq == nil {
		writeError(w, http.StatusBadRequest, "invalid_request", `"seq" is required: the session's seq you decided on (GET the session to read it)`)
		return
	}
	if len(req.Decisions) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request", `"decisions" must list at least one decision`)
		return
	}
	for i, d := range req.Decisions {
		if d.InterruptID == "" {
			writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("decisions[%d].interrupt_id is required", i))
			return
		}
	}
	// Who may decide is the runner's one decision point (Resume refuses
	// with forbidden, not_an_approver or already_approved); a session the
	// caller may not read answers as one that does not exist.
	if !s.mayRead(w, r) {
		return
	}
	sess, err := s.runner.Resume(turnContext(r), r.PathValue("id"), *req.Seq, req.Decisions, decidedBy(p))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.forCaller(callerOf(r), sess))
}

type invokeRequest struct {
	Input        *string          `json:"input"`
	Continuation string           `json:"continuation"`
	Decisions    []cairn.Decision `json:"decisions"`
}

// invoke is the stateless mode: the paused state travels as a signed token.
func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	var req invokeRequest
	if !decodeBodyLimit(w, r, &req, maxInvokeBody) {
		return
	}
	agent := r.PathValue("agent")
	var res *cairn.Result
	var err error
	switch {
	case req.Input != nil && req.Continuation == "":
		res, err = s.runner.Invoke(turnContext(r), agent, *req.Input, nil)
	case req.Input == nil && req.Continuation != "":
		p, ok := require(w, r, RoleApprover, "resuming with decisions")
		if !ok {
			return
		}
		if len(req.Decisions) == 0 {
			writeError(w, http.StatusBadRequest, "invalid_request", `"decisions" must list at least one decision`)
			return
		}
		res, err = s.runner.Continue(turnContext(r), agent, req.Continuation, req.Decisions, decidedBy(p))
	default:
		writeError(w, http.StatusBadRequest, "invalid_request", `send either {"input": …} or {"continuation": …, "decisions": […]}`)
		return
	}
	if spent := (*continuation.SpentError)(nil); errors.As(err, &spent) && spent.Result != nil {
		// The answer of the resume that spent the token, for a client that lost it.
		writeJSON(w, http.StatusConflict, map[string]any{"error": map[string]string{"code": "conflict", "message": spent.Error()}, "result": spent.Result})
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

type cancelRequest struct {
	Scope session.CancelScope `json:"scope"`
}

func (s *Server) postCancel(w http.ResponseWriter, r *http.Request) {
	var req cancelRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if !slices.Contains(session.AllCancelScopes(), req.Scope) {
		writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf(`"scope" must be "top" or "all", got %q`, req.Scope))
		return
	}
	if !s.maySpeak(w, r, "cancels") {
		return
	}
	sess, err := s.runner.Cancel(turnContext(r), r.PathValue("id"), req.Scope, decidedBy(callerOf(r)))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.forCaller(callerOf(r), sess))
}

func (s *Server) listInterrupts(w http.ResponseWriter, r *http.Request) {
	if _, ok := require(w, r, RoleApprover, "the approval inbox"); !ok {
		return
	}
	if st := r.URL.Query().Get("status"); st != "" && st != "pending" {
		writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("status %q: only pending is supported", st))
		return
	}
	page, ok := pageParams(w, r)
	if !ok {
		return
	}
	if v := r.URL.Query().Get("kind"); v != "" {
		for _, k := range strings.Split(v, ",") {
			kind := cairn.Kind(strings.TrimSpace(k))
			if !kind.Known() {
				writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("kind %q is not one of %s (several: kind=external,client)%s", k, cairn.Kinds(),
					suggest.Hint(k, strings.Split(cairn.Kinds(), ", "))))
				return
			}
			page.Kinds = append(page.Kinds, kind)
		}
	}
	list, next, err := s.runner.InterruptsPage(r.Context(), page)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := callerOf(r)
	for i := range list {
		list[i].Interrupt, _ = previewInterrupt(list[i].Interrupt)
		may := s.runner.Decides(p.actor, "", &list[i].Interrupt) // the inbox is an approver's: the owner does not matter
		list[i].MayDecide = &may
	}
	writeListing(w, r, map[string]any{"interrupts": list, "next_cursor": nextCursor(next)})
}

// pageParams reads ?limit=N&cursor=C. Every listing is of what the caller
// may see: their tenant's sessions (cairn.Page.Viewer).
func pageParams(w http.ResponseWriter, r *http.Request) (cairn.Page, bool) {
	q := r.URL.Query()
	page := cairn.Page{Cursor: q.Get("cursor"), Viewer: callerOf(r).actor}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > cairn.MaxPageSize {
			writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("limit %q: use a number from 1 to %d (default %d)", v, cairn.MaxPageSize, cairn.DefaultPageSize))
			return page, false
		}
		page.Limit = n
	}
	return page, true
}

// nextCursor is null after the last page.
func nextCursor(next string) any {
	if next == "" {
		return nil
	}
	return next
}

func (s *Server) getEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	after, ok := afterParam(w, r)
	if !ok {
		return
	}
	if !s.mayRead(w, r) {
		return
	}
	if r.Header.Get("Accept") == "text/event-stream" {
		s.streamEvents(w, r, id, after)
		return
	}
	evs, err := s.runner.Events(r.Context(), id, after)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if evs == nil {
		evs = []cairn.Event{}
	}
	writeListing(w, r, map[string]any{"events": evs})
}

// getAudit says what the session's record proves (docs/audit.md): how
// far its chain holds and its last signed checkpoint.
func (s *Server) getAudit(w http.ResponseWriter, r *http.Request) {
	if !s.mayRead(w, r) {
		return
	}
	st, err := s.runner.Audit(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, auditBody{State: st, Summary: st.String()})
}

// auditBody is audit.State with its line.
type auditBody struct {
	audit.State
	// Summary says it in a line.
	Summary string `json:"summary"`
}

func afterParam(w http.ResponseWriter, r *http.Request) (int64, bool) {
	v := r.URL.Query().Get("after")
	if le := r.Header.Get("Last-Event-ID"); le != "" {
		v = le
	}
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("after %q is not a non-negative integer (an event seq)", v))
		return 0, false
	}
	return n, true
}

// streamEvents sends the recorded events after `after`, then live ones
// (recorded by any process sharing the store), as SSE.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, id string, after int64) {
	ctx := r.Context()
	if _, err := s.runner.Session(ctx, id); err != nil {
		s.fail(w, r, err)
		return
	}
	release, flush, ok := s.openStream(w, id)
	if !ok {
		return
	}
	defer release()
	pump(ctx, s, w, flush, s.streamIdle,
		func(ctx context.Context) iter.Seq2[cairn.Event, error] { return s.runner.Follow(ctx, id, after) },
		func(ev cairn.Event) []byte { return s.sse.message(id, ev) }, "")
}

// openStream reserves one of the server's event streams (on session id;
// "" for the cross-session feed) and starts the SSE answer; false when a
// limit refused it, with a 429 sent. The stream lives as long as its client
// reads it: each write gets WriteGrace (extendWrite) instead of one deadline
// for the whole response (net/http clears the read deadline once the
// request is read).
func (s *Server) openStream(w http.ResponseWriter, id string) (release, flush func(), ok bool) {
	select {
	case <-s.stopping:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "stopping", "this server is stopping; reconnect (to another node) with Last-Event-ID")
		return nil, nil, false
	default:
	}
	release, reason, ok := s.streams.acquire(id)
	if !ok {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusTooManyRequests, "too_many_streams", reason)
		return nil, nil, false
	}
	flusher, _ := w.(http.Flusher)
	flush = func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flush()
	return release, flush, true
}

// maxBody bounds a request body; the stateless endpoint takes a whole
// continuation token plus room for the decisions.
const (
	maxBody       = 4 << 20
	maxInvokeBody = cairn.MaxContinuationBytes + 1<<20
)

func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	return decodeBodyLimit(w, r, v, maxBody)
}

// decodeBodyLimit reads a JSON object of at most limit bytes into v. The
// body must be valid UTF-8: encoding/json would quietly replace bad bytes
// with U+FFFD and the stored text would differ from what was sent.
func decodeBodyLimit(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	return decodeBodyWith(w, r, v, limit, true)
}

// decodeLenient is decodeBodyLimit for bodies whose other fields belong to
// a client library (the AI SDK's messages): unknown fields are ignored.
func decodeLenient(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	return decodeBodyWith(w, r, v, limit, false)
}

func decodeBodyWith(w http.ResponseWriter, r *http.Request, v any, limit int64, strict bool) bool {
	if !jsonBody(w, r) {
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request", fmt.Sprintf("the body is larger than %d bytes", limit))
		} else {
			writeError(w, http.StatusBadRequest, "invalid_request", "the body could not be read: "+err.Error())
		}
		return false
	}
	if !utf8.Valid(body) {
		writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("the body is not valid UTF-8 (first bad byte at offset %d); send JSON text in UTF-8", badUTF8(body)))
		return false
	}
	if at, lone := loneSurrogate(body); lone {
		writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("the body has a lone UTF-16 surrogate escape %s at byte %d, which is no character; send the text as UTF-8, or the escape with its pair (\\ud83d\\ude00)", body[at:at+6], at))
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		msg := explainJSONError(err, body, v)
		if errors.Is(err, io.EOF) {
			msg = "the body is empty; send a JSON object"
		}
		writeError(w, http.StatusBadRequest, "invalid_request", msg)
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body has data after the JSON object")
		return false
	}
	return true
}

// badUTF8 returns the offset of the first byte that is not valid UTF-8.
func badUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// httpStatus maps an error code to its HTTP status (0: not a client error).
func httpStatus(code string) int { return session.Code(code).HTTPStatus() }

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := cairn.ErrorCode(err)
	status := httpStatus(code)
	if status == 0 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "the server could not complete the request: "+err.Error())
		return
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	writeError(w, status, code, err.Error())
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// writeListing answers a listing (200), gzipped when it is large and the
// client accepts gzip: a page of 1,000 sessions is about 600 KB of JSON and
// 40 KB compressed.
func writeListing(w http.ResponseWriter, r *http.Request, v any) {
	body, ok := encodeJSON(w, v)
	if !ok {
		return
	}
	w.Header().Add("Vary", "Accept-Encoding")
	if len(body) < gzipAbove || !acceptsGzip(r) {
		w.Write(body)
		return
	}
	w.Header().Set("Content-Encoding", "gzip")
	zw := gzip.NewWriter(w)
	// A write that fails means the client is gone: nothing to tell it.
	_, _ = zw.Write(body)
	_ = zw.Close()
}

// gzipAbove is the size from which a listing is compressed.
const gzipAbove = 8 << 10

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		if enc, q, _ := strings.Cut(strings.TrimSpace(part), ";"); enc == "gzip" && strings.TrimSpace(q) != "q=0" {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, ok := encodeJSON(w, v)
	if !ok {
		return
	}
	w.WriteHeader(status)
	w.Write(body) // a client that hung up is not an error of ours
}

// encodeJSON encodes an answer before anything is sent and sets its
// content type; a value that cannot be encoded is a bug of the server,
// answered as a 500 (ok false) rather than as a truncated 200.
func encodeJSON(w http.ResponseWriter, v any) (body []byte, ok bool) {
	extendWrite(w)
	w.Header().Set("Content-Type", "application/json")
	if s, ok := v.(*session.Session); ok && s != nil {
		// What the encoder below writes for a session: its MarshalJSON,
		// which is compact already (the encoder would compact it again,
		// a scan of every byte), and a newline.
		if body, err := s.MarshalJSON(); err == nil {
			return append(body, '\n'), true
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		msg, _ := json.Marshal("encode response: " + err.Error())
		fmt.Fprintf(w, `{"error":{"code":"internal","message":%s}}`+"\n", msg)
		return nil, false
	}
	return b.Bytes(), true
}

// agentNames are the names of the runner's agents.
func (s *Server) agentNames() []string {
	var names []string
	for _, a := range s.runner.Agents() {
		names = append(names, a.Name)
	}
	return names
}
