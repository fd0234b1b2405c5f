package session

// Bulk decisions (POST /v1/decisions, Runner.DecideMany): many pending
// calls across sessions decided in one request, each exactly as through
// its own session's decisions (the same checks, events and authority),
// with the batch's id on each decision event.

// BulkRequest is a bulk decision: an explicit list of decisions (each
// naming its session), or a selector of pending interrupts with the one
// Action (and Reason) to take on each, at most Limit of them.
type BulkRequest struct {
	Decisions []BulkDecision `json:"decisions,omitempty"`
	Select    *Selector      `json:"select,omitempty"`
	// Action, Reason and Limit go with Select: approve or reject each
	// selected call (Reason for a rejection, which the model sees), at
	// most Limit of them (default DefaultBulkLimit, at most MaxBulkLimit).
	Action Action `json:"action,omitempty"`
	Reason string `json:"reason,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// BulkDecision is one decision of an explicit list: the session it is
// about, and the Decision as its session's decisions endpoint takes it.
type BulkDecision struct {
	SessionID string `json:"session_id"`
	Decision
}

// Selector picks pending interrupts the actor may decide, across the
// sessions they may see, newest pause first: of these kinds (default
// approval), of this tool and this agent (the agent whose call it is), in
// these sessions; empty fields select all.
type Selector struct {
	Kind       Kind     `json:"kind,omitempty"`
	Tool       string   `json:"tool,omitempty"`
	Agent      string   `json:"agent,omitempty"`
	SessionIDs []string `json:"session_ids,omitempty"`
}

// Bulk limits: the calls one bulk request decides.
const (
	DefaultBulkLimit = 100
	MaxBulkLimit     = 1000
)

// BulkResponse is what a bulk decision did: a result per call, in the
// request's order (a selector's: newest pause first), and the batch's id,
// recorded on each decision event it made (DecisionMade.Batch).
type BulkResponse struct {
	Results []BulkResult `json:"results"`
	Batch   string       `json:"batch"`
}

// BulkResult is what happened to one call: Status is the HTTP status its
// session's decisions endpoint would have answered (200 decided; 400,
// 403, 404, 409, 410 refused, with Error saying why; 503 the session was
// busy and nothing was recorded: decide it again).
type BulkResult struct {
	SessionID   string     `json:"session_id"`
	InterruptID string     `json:"interrupt_id"`
	Status      int        `json:"status"`
	Error       *ErrorBody `json:"error,omitempty"`
	// SessionStatus is where the session stands after a decision (200):
	// completed, paused again, running.
	SessionStatus Status `json:"session_status,omitempty"`
}

// ErrorBody is an error as the HTTP API answers it: its code and message.
type ErrorBody struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}
