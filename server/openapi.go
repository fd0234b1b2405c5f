package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/session"
)

// The OpenAPI document of the HTTP API is built from the operations below
// and served at GET /v1/openapi.json. Its schemas are generated from the Go
// types the handlers decode and encode, so they cannot drift from the wire;
// TestOpenAPIMatchesTheServer checks that every route the server registers
// is documented, and that every documented status code occurs.

// operation documents one route.
type operation struct {
	method, path string
	id, summary  string
	query        []param
	request      any // a value of the body's type; nil: no body
	responses    map[int]reply
	sse          bool   // also answers text/event-stream
	sseOnly      bool   // answers text/event-stream only
	media        string // the 200 answer's media type when not JSON
}

type param struct{ name, description, typ string }

// reply documents one status of an operation; body nil means the error body.
type reply struct {
	description string
	body        any
}

// Response bodies the handlers build as maps, given types for the document.
type (
	errorBody struct {
		Error struct {
			Code    string `json:"code" jsonschema:"machine-readable: conflict, not_found, invalid_request, …"`
			Message string `json:"message" jsonschema:"what went wrong, where, and how to fix it"`
		} `json:"error"`
	}
	spentBody struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Result *cairn.Result `json:"result,omitempty" jsonschema:"the answer of the resume that spent the token, once it has answered"`
	}
	sessionsPage struct {
		Sessions   []*cairn.Session `json:"sessions"`
		NextCursor *string          `json:"next_cursor" jsonschema:"pass as cursor for the next page; null after the last"`
	}
	interruptsPage struct {
		Interrupts []cairn.PendingInterrupt `json:"interrupts"`
		NextCursor *string                  `json:"next_cursor" jsonschema:"pass as cursor for the next page; null after the last"`
	}
	eventsBody struct {
		Events []cairn.Event `json:"events"`
	}
	healthBody struct {
		Status string `json:"status"`
	}
	agentsBody struct {
		Agents []cairn.AgentInfo `json:"agents"`
	}
	// aguiDoc documents the fields of RunAgentInput Cairn reads.
	aguiDoc struct {
		ThreadID string           `json:"threadId" jsonschema:"the session id (1–128 letters, digits, . _ - :)"`
		RunID    string           `json:"runId"`
		Messages []map[string]any `json:"messages" jsonschema:"Cairn reads the last user message's text"`
		Resume   []map[string]any `json:"resume,omitempty" jsonschema:"answers to the interrupts of the previous run: {interruptId, status: resolved|cancelled, payload}"`
	}
	// chatDoc documents the fields of an AI SDK chat request Cairn reads.
	chatDoc struct {
		ID              string                     `json:"id" jsonschema:"the chat's id: the session's id (1–128 letters, digits, . _ - :)"`
		Messages        []map[string]any           `json:"messages" jsonschema:"the UIMessages; Cairn reads the last user message's text and the last assistant message's approval-responded tool parts"`
		Trigger         string                     `json:"trigger,omitempty"`
		MessageID       string                     `json:"messageId,omitempty"`
		EditedArguments map[string]json.RawMessage `json:"editedArguments,omitempty" jsonschema:"replacement arguments by approval id, for approved calls"`
	}
)

// Replies most operations share.
var (
	badRequest   = reply{description: "the request is malformed; error.message names the field and the fix"}
	unauthorized = reply{description: "no bearer token, or not a valid one (only when auth is configured)"}
	forbidden    = reply{description: "the token's role may not do this, or the session belongs to another user"}
	notFound     = reply{description: "no such session"}
	tooLarge     = reply{description: "the body is larger than the server accepts"}
	conflict     = reply{description: "the session is not in a state that accepts this, or seq is stale (another request won); nothing changed"}
	stopping     = reply{description: "this server is draining (shutting down) and takes no new turns (stopping); nothing was recorded: send it again, to another server, after Retry-After"}
)

var pageQuery = []param{
	{"limit", "items per page (default 100, at most 1000)", "integer"},
	{"cursor", "next_cursor of the previous page", "string"},
}

func operations() []operation {
	return []operation{
		{method: "POST", path: "/v1/sessions", id: "createSession",
			summary: "Start a session with the user's first message; answers after the first turn ends or pauses (or at once with wait: false).",
			request: createRequest{}, responses: map[int]reply{
				201: {"the session", &cairn.Session{}}, 400: {description: "the request is malformed, or names no configured agent"},
				401: unauthorized, 413: tooLarge, 503: stopping}},
		{method: "GET", path: "/v1/sessions", id: "listSessions", summary: "List sessions, most recently updated first, a page at a time.",
			query: append([]param{{"status", "running, paused, completed, failed or cancelled", "string"},
				{"agent", "only the sessions of this agent", "string"}}, pageQuery...),
			responses: map[int]reply{200: {"a page of sessions", sessionsPage{}}, 400: badRequest, 401: unauthorized}},
		{method: "GET", path: "/v1/sessions/{id}", id: "getSession", summary: "Read a session as last recorded.",
			responses: map[int]reply{200: {"the session", &cairn.Session{}}, 401: unauthorized, 404: notFound}},
		{method: "POST", path: "/v1/sessions/{id}/messages", id: "postMessage",
			summary: "Send the user's next message to the top of the stack and run the turn.",
			request: messageRequest{}, responses: map[int]reply{
				200: {"the session after the turn", &cairn.Session{}}, 400: badRequest, 401: unauthorized,
				403: {description: "only the session's owner or an admin posts messages (an approver reads it)"},
				404: notFound, 409: conflict, 413: tooLarge, 503: stopping}},
		{method: "POST", path: "/v1/sessions/{id}/decisions", id: "postDecisions",
			summary: "Answer the interrupts of a paused session and run the resumed turn.",
			request: decisionsRequest{}, responses: map[int]reply{
				200: {"the session after the resumed turn", &cairn.Session{}}, 400: badRequest, 401: unauthorized,
				403: forbidden, 404: notFound, 409: conflict, 413: tooLarge,
				410: {description: "an approval expired before the decision (it counts as rejected), or a wait passed its deadline"},
				503: {description: "this server is draining (stopping), or a lone completion (complete, fail) arrived while the session ran and it did not come to wait on the call within 30 s (session_busy); nothing was recorded: send it again after Retry-After"}}},
		{method: "POST", path: "/v1/sessions/{id}/cancel", id: "postCancel",
			summary: "Cancel the top interactive agent (top) or the whole turn (all).",
			request: cancelRequest{}, responses: map[int]reply{
				200: {"the session", &cairn.Session{}}, 400: badRequest, 401: unauthorized,
				403: {description: "only the session's owner or an admin cancels (an approver reads it)"},
				404: notFound, 409: {description: "nothing to cancel"}}},
		{method: "POST", path: "/v1/sessions/{id}/fork", id: "postFork",
			summary: "Fork the session at an event where it paused or waited for a message (seq; default the latest): a new session whose log is a copy up to there (provider data included, nothing runs again), with forked_from, to decide differently or send another message. The original is not changed. See docs/http-api.md.",
			request: forkRequest{}, responses: map[int]reply{
				201: {"the fork", &cairn.Session{}},
				400: {description: "seq is not a point where the session paused or waited for a message (not_a_fork_point: the message names the nearest before and after), or out of range"},
				401: unauthorized, 404: notFound, 413: tooLarge, 503: stopping}},
		{method: "POST", path: "/v1/sessions/{id}/interrupts/{interrupt_id}/preview", id: "postPreview",
			summary: "Compute the dry run (preview) of a pending approval's call with edited arguments, without deciding: the arguments are checked as a decision's, the caller must be one who may approve it, and nothing is recorded. See docs/previews.md.",
			request: previewRequest{}, responses: map[int]reply{
				200: {"the preview (a dry run that failed is a preview with error)", &cairn.Preview{}},
				400: {description: "the arguments do not match the tool's schema (invalid_arguments), the interrupt is not pending (unknown_interrupt), or its tool has no preview"},
				401: unauthorized, 403: forbidden, 404: notFound, 413: tooLarge}},
		{method: "GET", path: "/v1/sessions/{id}/events", id: "getEvents",
			summary: "Read the session's events after a seq; with Accept: text/event-stream, follow them live.",
			query:   []param{{"after", "return the events with a greater seq (default 0)", "integer"}}, sse: true,
			responses: map[int]reply{200: {"the events (or a Server-Sent Events stream)", eventsBody{}}, 400: badRequest,
				401: unauthorized, 404: notFound,
				429: {description: "too many event streams are open (on this session or on the server)"}}},
		{method: "GET", path: "/v1/sessions/{id}/audit", id: "getAudit",
			summary:   "What the session's record proves: how far its chain of event hashes holds, and its last signed checkpoint (docs/audit.md).",
			responses: map[int]reply{200: {"the record's state", auditBody{}}, 401: unauthorized, 404: notFound}},
		{method: "GET", path: "/v1/interrupts", id: "listInterrupts",
			summary: "The approval inbox: pending interrupts across sessions, most recently paused first.",
			query: append([]param{{"status", "pending (the only value)", "string"},
				{"kind", "only interrupts of these kinds, comma-separated (external: calls waiting on other systems)", "string"}}, pageQuery...),
			responses: map[int]reply{200: {"a page of pending interrupts", interruptsPage{}}, 400: badRequest,
				401: unauthorized, 403: forbidden}},
		{method: "POST", path: "/v1/decisions", id: "postBulkDecisions",
			summary: "Decide many pending calls across sessions: a list of decisions (each with its session_id), or a select (kind, tool, agent, session_ids) with one action, reason and limit. Each call is decided as through its session's decisions endpoint (same checks, same events, data.batch on each); one call's failure is its own result. See docs/http-api.md.",
			request: cairn.BulkRequest{}, responses: map[int]reply{
				200: {"a result per call (status 200 decided; 400, 403, 404, 409, 410 refused with error; 503 busy, nothing recorded) and the batch id", &cairn.BulkResponse{}},
				400: {description: "the request is malformed: both or neither of decisions and select, a select without approve or reject, a limit out of range, a decision listed twice"},
				401: unauthorized, 403: {description: "only approvers and admins decide in bulk"}, 413: tooLarge}},
		{method: "GET", path: "/v1/rules", id: "listRules",
			summary: "The standing rules of the caller's tenant (every tenant's for a global actor): live ones, or every one with all=true. A decision grants one with its rule field (docs/rules.md). For approvers and admins.",
			query:   []param{{"tool", "only this tool's rules", "string"}, {"all", "true: revoked and expired rules too", "boolean"}},
			responses: map[int]reply{200: {"the rules, oldest grant first", rulesBody{}}, 400: badRequest, 401: unauthorized,
				403: {description: "only approvers and admins list standing rules"}}},
		{method: "DELETE", path: "/v1/rules/{id}", id: "revokeRule",
			summary: "Revoke a standing rule at once, on every server sharing the store: a call made after the answer is not decided by it. Any approver or admin of its tenant revokes it.",
			responses: map[int]reply{200: {"the rule, revoked (a rule revoked before keeps its first revocation)", &cairn.Rule{}}, 401: unauthorized,
				403: {description: "only approvers and admins revoke standing rules"}, 404: notFound}},
		{method: "GET", path: "/v1/analytics", id: "getAnalytics",
			summary: "The approval process's figures for the caller's tenant, a row per tool, agent or approver: pending, decided, approved, rejected, edited, expired, decided by standing rules, time to decision (median, 90th percentile), fast approvals and the longest approval streak (docs/analytics.md). For approvers and admins.",
			query: []param{{"since", "count decisions at or after this time (RFC 3339)", "string"}, {"until", "count decisions before this time (RFC 3339)", "string"},
				{"by", "tool (default), agent or approver", "string"}, {"read_time", "approvals faster than this (a Go duration, default 5s) are fast", "string"}},
			responses: map[int]reply{200: {"the figures", &cairn.Analytics{}}, 400: badRequest, 401: unauthorized,
				403: {description: "only approvers and admins read the analytics"}}},
		{method: "POST", path: "/v1/approvals", id: "createApproval",
			summary: "Ask a person to approve a call your own code makes: a session of the approvals agent paused on one approval interrupt (the inbox, webhooks, governance and audit apply). A repeated idempotency_key answers 200 with the same request. See docs/gateway.md.",
			request: approvalRequest{}, responses: map[int]reply{
				201: {"the request, pending", &cairn.CallApproval{}}, 200: {"the request the idempotency_key names", &cairn.CallApproval{}},
				400: badRequest, 401: unauthorized,
				409: {description: "the idempotency_key names another request (another tool or other arguments); nothing changed"},
				413: tooLarge, 503: stopping}},
		{method: "GET", path: "/v1/approvals/{id}", id: "getApproval",
			summary: "Where an approval request stands: pending, approved (with the arguments as approved), rejected or expired (with the reason), cancelled; with wait, answers once it is decided or the wait ends.",
			query:   []param{{"wait", "wait up to this long (like 30s; at most 60s) for a decision", "string"}},
			responses: map[int]reply{200: {"the request", &cairn.CallApproval{}}, 400: badRequest, 401: unauthorized,
				404: {description: "no such request (or it is another user's)"}}},
		{method: "POST", path: "/v1/approvals/{id}/result", id: "postApprovalResult",
			summary: "Record what the approved function did (output or error), once: the request's session completes and its audit trail shows it.",
			request: resultRequest{}, responses: map[int]reply{
				200: {"the request with its result", &cairn.CallApproval{}}, 400: badRequest, 401: unauthorized,
				403: {description: "only the request's owner or an admin records its result"},
				404: {description: "no such request (or it is another user's)"},
				409: {description: "the request is not approved, or its result is recorded already; nothing changed"}, 413: tooLarge}},
		{method: "POST", path: "/v1/agents/{agent}/invoke", id: "invoke",
			summary: "Run an agent statelessly, or resume a continuation token with decisions; nothing is kept on the server.",
			request: invokeRequest{}, responses: map[int]reply{
				200: {"the result; continuation is present while paused", &cairn.Result{}},
				400: {description: "the request is malformed, names no configured agent, or the token is not valid (invalid_continuation)"},
				401: unauthorized, 403: {description: "resuming with decisions needs the approver role"},
				409: {"the token was already spent; result carries the answer of the resume that spent it", spentBody{}},
				413: tooLarge}},
		{method: "GET", path: "/v1/agents", id: "listAgents",
			summary:   "The configured agents: their tools, argument schemas and when each call waits for a person.",
			responses: map[int]reply{200: {"the agents", agentsBody{}}, 401: unauthorized}},
		{method: "GET", path: "/v1/me", id: "me", summary: "Who the token is: its name and role (what a client may offer).",
			responses: map[int]reply{200: {"the caller", meBody{}}, 401: unauthorized}},
		{method: "GET", path: "/auth/info", id: "authInfo", summary: "How a person signs in to the page: sign_in is where the server signs them in with the OpenID Provider (auth.oidc); absent: tokens only. No bearer token.",
			responses: map[int]reply{200: {"how to sign in", signInInfo{}}}},
		{method: "GET", path: "/auth/login", id: "signIn", media: "text/html",
			summary:   "Sign in to the page with the OpenID Provider: redirects to its login page (authorization code with PKCE); the provider sends the browser back to /auth/callback. See docs/web.md.",
			responses: map[int]reply{302: {description: "to the provider's login page"}, 404: {description: "the server signs no one in (no auth.oidc, or no public_url)"}, 502: {description: "the provider cannot be reached"}}},
		{method: "GET", path: "/auth/callback", id: "signInCallback", media: "text/html",
			summary:   "Where the provider sends the browser back: the code is exchanged, the ID token verified and kept in an HttpOnly cookie (cairn_session) that authenticates the page's requests; then to the page.",
			responses: map[int]reply{302: {description: "signed in: to the page"}, 400: {description: "no sign-in under way in this browser, or its state does not match"}, 401: {description: "the provider refused, or its ID token does not verify"}, 404: {description: "the server signs no one in"}}},
		{method: "POST", path: "/auth/logout", id: "signOut", summary: "Sign out of the page: the session cookie is forgotten.",
			responses: map[int]reply{200: {description: "signed out"}, 404: {description: "the server signs no one in"}}},
		{method: "GET", path: "/v1/events", id: "streamChanges", sseOnly: true,
			summary: "Follow every session (SSE): event session (data: the Session) each time its status or pending interrupts may have changed, on any process; event resync when changes may have been missed. Subscribe, then read the listings.",
			responses: map[int]reply{200: {description: "a Server-Sent Events stream"}, 401: unauthorized,
				429: {description: "too many event streams are open on the server"}}},
		{method: "GET", path: "/v1/openapi.json", id: "openapi", summary: "This document.",
			responses: map[int]reply{200: {"the OpenAPI 3.1 document", map[string]any{}}}},
		{method: "GET", path: "/", id: "page", summary: "The web page: approval inbox, sessions, a new session (no token needed to load it; it asks for one).",
			media: "text/html", responses: map[int]reply{200: {description: "the page"}}},
		{method: "GET", path: "/ui/{file}", id: "pageAsset", summary: "The web page's script and styles.",
			media: "text/javascript, text/css", responses: map[int]reply{200: {description: "the file"}, 404: {description: "no such file"}}},
		{method: "POST", path: "/v1/agents/{agent}/chat", id: "chat", sseOnly: true, request: chatDoc{},
			summary: "The Vercel AI SDK UI message stream (v1) for useChat / DefaultChatTransport: id is the session id (created on first use); approvals from the re-posted messages' approval-responded tool parts; editedArguments by approval id. See docs/protocols.md.",
			responses: map[int]reply{200: {description: "a UI message stream (x-vercel-ai-ui-message-stream: v1), ending with data: [DONE]"}, 400: badRequest, 401: unauthorized, 403: forbidden,
				409: {description: "the chat id is another user's; choose another"}}},
		{method: "GET", path: "/v1/agents/{agent}/chat/{id}/stream", id: "chatStream", sseOnly: true,
			summary:   "Resume the UI message stream of the chat's running turn.",
			responses: map[int]reply{200: {description: "a UI message stream"}, 204: {description: "no turn runs"}, 401: unauthorized, 404: notFound}},
		{method: "POST", path: "/v1/agents/{agent}/ag-ui", id: "agui", sseOnly: true, request: aguiDoc{},
			summary: "AG-UI: RunAgentInput → events; threadId is the session id; a pause ends the run with RUN_FINISHED outcome interrupt; resume entries answer it (payload {approved, editedArgs, reason}, or {text} / the form's object for questions). See docs/protocols.md.",
			responses: map[int]reply{200: {description: "AG-UI events (SSE), from RUN_STARTED to RUN_FINISHED or RUN_ERROR"}, 400: badRequest, 401: unauthorized,
				409: {description: "the thread id is another user's; choose another"}}},
		{method: "POST", path: "/mcp", id: "mcp", summary: "MCP (streamable HTTP): the agents as tools, pauses asked by elicitation, cairn_resume; see docs/mcp.md. The same tokens; deciding needs approver.",
			media: "application/json, text/event-stream", responses: map[int]reply{200: {description: "an MCP message or stream"}, 202: {description: "a notification or response, accepted"}, 401: unauthorized}},
		{method: "GET", path: "/mcp", id: "mcpStream", summary: "MCP (streamable HTTP): the server's stream of an MCP session.",
			media: "text/event-stream", responses: map[int]reply{200: {description: "an MCP stream"}, 401: unauthorized}},
		{method: "DELETE", path: "/mcp", id: "mcpEnd", summary: "MCP (streamable HTTP): ends an MCP session.",
			responses: map[int]reply{204: {description: "ended"}, 401: unauthorized}},
		{method: "POST", path: "/mcp/gateway", id: "mcpGateway", summary: "The MCP approval gateway (streamable HTTP): the gateway's MCP servers' tools under Cairn's approval policies; a call that needs a person is held (progress, elicitation) until decided and run, or for gateway.hold. See docs/gateway.md. Served with a gateway section.",
			media: "application/json, text/event-stream", responses: map[int]reply{200: {description: "an MCP message or stream"}, 202: {description: "a notification or response, accepted"}, 401: unauthorized}},
		{method: "GET", path: "/mcp/gateway", id: "mcpGatewayStream", summary: "The MCP approval gateway: the server's stream of an MCP session.",
			media: "text/event-stream", responses: map[int]reply{200: {description: "an MCP stream"}, 401: unauthorized}},
		{method: "DELETE", path: "/mcp/gateway", id: "mcpGatewayEnd", summary: "The MCP approval gateway: ends an MCP session.",
			responses: map[int]reply{204: {description: "ended"}, 401: unauthorized}},
		{method: "POST", path: "/a2a/{agent}", id: "a2a", summary: "A2A 1.0, the JSON-RPC binding (SendMessage, SendStreamingMessage, GetTask, CancelTask, SubscribeToTask) of an agent named in a2a.agents: a task is a session; a pause is TASK_STATE_INPUT_REQUIRED with the interrupts and seq as a data part; a data part {decisions, seq} decides. See docs/a2a.md. The same tokens.",
			media: "application/json, text/event-stream", responses: map[int]reply{200: {description: "a JSON-RPC response, or an SSE stream of them"}, 401: unauthorized, 404: notFound}},
		{method: "POST", path: "/a2a/{agent}/", id: "a2aSlash", summary: "The same A2A endpoint with a trailing slash: a client resolves the card relative to the URL it is given (the JavaScript SDK needs the slash).",
			media: "application/json, text/event-stream", responses: map[int]reply{200: {description: "a JSON-RPC response, or an SSE stream of them"}, 401: unauthorized, 404: notFound}},
		{method: "GET", path: "/a2a/{agent}/.well-known/agent-card.json", id: "a2aCard", summary: "The A2A agent card of an agent named in a2a.agents: its endpoint, skills (its tools), streaming, and the bearer scheme when tokens are configured. No token needed.",
			responses: map[int]reply{200: {description: "the agent card (A2A 1.0; its schema is the protocol's)", body: map[string]any{}}, 404: notFound}},
		{method: "GET", path: "/v1/actions/{token}", id: "actionPage", media: "text/html",
			summary: "An action link from a webhook (data.actions): a page saying what it decides, with the button that POSTs it. No bearer token: the signed link is the credential. Error pages are HTML too. See docs/webhooks.md.",
			responses: map[int]reply{200: {description: "the confirmation page"}, 403: {description: "the link was altered, or no server on this store signed it (invalid_link)"},
				409: {description: "the link was used, or the interrupt was decided another way"}, 410: {description: "the link expired with its approval (expired), or its session was purged (gone): it never acts again, not even on a later session given the same id"}}},
		{method: "POST", path: "/v1/actions/{token}", id: "followAction", media: "text/html, application/json",
			summary: "Decide through an action link, once (form field reason, on reject, is shown to the model); answers a page, or the Session with Accept: application/json. See docs/webhooks.md.",
			responses: map[int]reply{200: {description: "the decision was made; the session after the resumed turn"}, 400: badRequest,
				403: {description: "the link was altered, or no server on this store signed it (invalid_link)"},
				409: {description: "the link was used, or the interrupt was decided another way; nothing changed"}, 410: {description: "the link expired with its approval (expired), or its session was purged (gone): it never acts again, not even on a later session given the same id"}}},
		{method: "POST", path: "/v1/callbacks/{token}", id: "callback",
			summary: "Complete a call that waits on a system, once, through the callback URL its tool was given (cairn.CallbackURL, CAIRN_CALLBACK_URL): {\"output\": …} or {\"error\": \"…\"}. No bearer token: the signed URL is the credential. See docs/waits.md.",
			request: callbackRequest{}, responses: map[int]reply{200: {"the call was completed; where the session went", callbackReply{}}, 400: badRequest,
				403: {description: "the URL was altered, or no server on this store signed it (invalid_link)"},
				409: {description: "the URL was used, or the call was completed another way; nothing changed"},
				410: {description: "the wait passed its deadline, and the late result is not recorded (expired); or the session was purged (gone): the URL never acts again, not even on a later session given the same id"},
				503: {description: "the session ran (or was being taken over) and did not come to wait on the call within 30 s (session_busy), or this server is draining (stopping); nothing was recorded: send it again after Retry-After"}}},
		{method: "GET", path: "/metrics", id: "metrics", media: "text/plain",
			summary:   "Prometheus metrics (cairn serve): turns, decisions, model and tool call durations, commit latency and group-commit batches, cache hits, takeovers, open streams; see docs/operations.md. With auth, an admin token.",
			responses: map[int]reply{200: {description: "the Prometheus text format"}, 401: unauthorized, 403: forbidden}},
		{method: "GET", path: "/debug/pprof/", id: "profile", media: "application/octet-stream",
			summary:   "Profiles of the running server (net/http/pprof; cairn serve, server.Options.Profiling): /debug/pprof/ lists them; profile?seconds=N (CPU, N under 60), heap, allocs, goroutine, trace. With auth, an admin token. See docs/operations.md.",
			responses: map[int]reply{200: {description: "a profile (pprof's protobuf format), or the list (HTML)"}, 401: unauthorized, 403: forbidden}},
		{method: "GET", path: "/healthz", id: "health", summary: "Liveness.",
			responses: map[int]reply{200: {"the server is up", healthBody{}}}},
	}
}

// openAPIDocument renders operations as an OpenAPI 3.1 document.
func openAPIDocument() ([]byte, error) {
	schemas := map[string]any{}
	components, err := componentSchemas()
	if err != nil {
		return nil, err
	}
	for name, s := range components {
		schemas[name] = s
	}
	ref := func(v any) (map[string]any, error) {
		t := reflect.TypeOf(v)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Map {
			return map[string]any{"type": "object"}, nil
		}
		name := schemaName(t)
		if _, ok := schemas[name]; !ok {
			s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: wireSchemas()})
			if err != nil {
				return nil, fmt.Errorf("schema of %s: %w", t, err)
			}
			if t == reflect.TypeFor[session.CallApproval]() && s.Properties != nil {
				// A pointer to a referenced schema would read "null only".
				s.Properties["interrupt"] = &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "null"}, {Ref: "#/components/schemas/Interrupt"}},
					Description: "what the request waits on: the approval while pending, the caller's result once approved; absent once done"}
			}
			if t == reflect.TypeFor[session.Session]() && s.Properties != nil {
				// Session.MarshalJSON: a structured answer is a JSON value.
				s.Properties["output"] = &jsonschema.Schema{Description: "the final answer: its text, or, for an agent with an output_schema, the JSON value (its text is then output_text)"}
				s.Properties["output_text"] = &jsonschema.Schema{Type: "string", Description: "the final answer's text, for an agent with an output_schema"}
			}
			schemas[name] = s
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}, nil
	}
	paths := map[string]map[string]any{}
	for _, op := range operations() {
		o := map[string]any{"operationId": op.id, "summary": op.summary}
		var params []any
		for _, name := range pathParams(op.path) {
			params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range op.query {
			params = append(params, map[string]any{"name": q.name, "in": "query", "description": q.description, "schema": map[string]any{"type": q.typ}})
		}
		if params != nil {
			o["parameters"] = params
		}
		if op.request != nil {
			s, err := ref(op.request)
			if err != nil {
				return nil, err
			}
			o["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": s}}}
		}
		responses := map[string]any{}
		for status, rp := range op.responses {
			content := map[string]any{}
			if op.media != "" && status == http.StatusOK {
				for _, m := range strings.Split(op.media, ", ") {
					content[m] = map[string]any{"schema": map[string]any{"type": "string"}}
				}
			} else if !(op.sseOnly && status == http.StatusOK) {
				body := rp.body
				if body == nil {
					body = errorBody{}
				}
				s, err := ref(body)
				if err != nil {
					return nil, err
				}
				content["application/json"] = map[string]any{"schema": s}
			}
			if (op.sse || op.sseOnly) && status == http.StatusOK {
				content["text/event-stream"] = map[string]any{"schema": map[string]any{"type": "string",
					"description": "Server-Sent Events; see docs/http-api.md"}}
			}
			responses[fmt.Sprint(status)] = map[string]any{"description": rp.description, "content": content}
		}
		o["responses"] = responses
		if paths[op.path] == nil {
			paths[op.path] = map[string]any{}
		}
		paths[op.path][strings.ToLower(op.method)] = o
	}
	return json.MarshalIndent(map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "Cairn HTTP API", "version": "1",
			"description": "Agents that pause anywhere and resume anywhere. See docs/http-api.md."},
		"components": map[string]any{
			"schemas":         schemas,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
		},
		"security": []any{map[string]any{"bearer": []any{}}, map[string]any{}},
		"paths":    paths,
	}, "", "  ")
}

// serveOpenAPI answers the document, built once.
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	s.openapiOnce.Do(func() { s.openapi, s.openapiErr = openAPIDocument() })
	if s.openapiErr != nil {
		writeError(w, http.StatusInternalServerError, "internal", "build the OpenAPI document: "+s.openapiErr.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(s.openapi)
}

// wireSchemas are the types whose JSON is not what their Go type suggests.
func wireSchemas() map[reflect.Type]*jsonschema.Schema {
	// An interrupt is a component of its own, referred to from every body
	// that holds one (componentSchemas).
	out := valueSchemas()
	out[reflect.TypeFor[session.Interrupt]()] = &jsonschema.Schema{Ref: "#/components/schemas/Interrupt"}
	out[reflect.TypeFor[session.PendingInterrupt]()] = &jsonschema.Schema{Ref: "#/components/schemas/PendingInterrupt"}
	return out
}

// valueSchemas are the schemas of the values whose JSON is not what their
// Go type suggests: any JSON, times, and every enum from its Go list.
func valueSchemas() map[reflect.Type]*jsonschema.Schema {
	return map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {Description: "any JSON value"},
		reflect.TypeFor[time.Time]():       {Type: "string", Format: "date-time"},
		// Every enum that reaches JSON, from its Go list.
		reflect.TypeFor[session.Kind]():           enum(session.AllKinds()),
		reflect.TypeFor[session.Status]():         enum(session.AllStatuses()),
		reflect.TypeFor[session.ApprovalStatus](): enum(session.AllApprovalStatuses()),
		reflect.TypeFor[session.Action]():         enum(session.AllActions()),
		reflect.TypeFor[session.Mode]():           enum(session.AllModes()),
		reflect.TypeFor[session.CancelScope]():    enum(session.AllCancelScopes()),
		reflect.TypeFor[session.OnTimeout]():      enum(session.AllOnTimeouts()),
		reflect.TypeFor[session.ExpiryAction]():   enum(session.AllExpiryActions()),
		reflect.TypeFor[session.Decider]():        enum(session.AllDeciders()),
		reflect.TypeFor[session.Field]():          enum(session.AllFields()),
		reflect.TypeFor[session.EventType]():      enum(session.AllEventTypes()),
		reflect.TypeFor[session.Via]():            enum(session.AllVias()),
		reflect.TypeFor[session.PreviewFormat]():  enum(session.AllPreviewFormats()),
	}
}

// componentSchemas are the schemas that bodies refer to rather than
// repeat: an interrupt as Interrupt.MarshalJSON writes it (with its Ask),
// and a pending one of the inbox.
func componentSchemas() (map[string]*jsonschema.Schema, error) {
	plain := valueSchemas()
	type interrupt struct {
		session.Interrupt
		Ask session.Ask `json:"ask" jsonschema:"how a person is asked about it: render any kind from this"`
	}
	type pending struct {
		interrupt
		SessionID  string              `json:"session_id"`
		Tenant     string              `json:"tenant,omitempty" jsonschema:"the session's tenant (absent: the default tenant)"`
		Seq        int64               `json:"seq" jsonschema:"the seq a decision on this interrupt must name"`
		PausedAt   time.Time           `json:"paused_at"`
		Suggestion *session.Suggestion `json:"suggestion,omitempty" jsonschema:"a standing rule the decision history supports for calls like this one, with its evidence (docs/analytics.md)"`
	}
	out := map[string]*jsonschema.Schema{}
	for name, wire := range map[string]reflect.Type{"Interrupt": reflect.TypeFor[interrupt](), "PendingInterrupt": reflect.TypeFor[pending]()} {
		s, err := jsonschema.ForType(wire, &jsonschema.ForOptions{TypeSchemas: plain})
		if err != nil {
			return nil, fmt.Errorf("schema of %s: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
}

// enum is the schema of a string enum: its values, from the Go list.
func enum[S ~string](values []S) *jsonschema.Schema {
	out := &jsonschema.Schema{Type: "string"}
	for _, v := range values {
		out.Enum = append(out.Enum, string(v))
	}
	return out
}

// schemaName is a type's name in components.schemas: Session, Result, …
func schemaName(t reflect.Type) string {
	name := t.Name()
	if name == "" {
		return "Object"
	}
	return strings.ToUpper(name[:1]) + name[1:]
}

// pathParams returns the {names} of a path, in order.
func pathParams(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			out = append(out, strings.Trim(seg, "{}"))
		}
	}
	return out
}
