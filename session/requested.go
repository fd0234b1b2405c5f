package session

import (
	"encoding/json"
	"time"
)

// CallApproval is an approval request for a call the caller makes itself
// (POST /v1/approvals, cairn.Runner.RequestApproval): a session of a direct
// agent with one call, read as where its approval stands.
type CallApproval struct {
	// ID is the request's id, which is also its session's.
	ID        string         `json:"id"`
	SessionID string         `json:"session_id"`
	Status    ApprovalStatus `json:"status"`
	Tool      string         `json:"tool"`
	// Arguments are the call's: as requested while pending, as approved
	// (maybe edited by the approver) once approved.
	Arguments json.RawMessage `json:"arguments"`
	// Edited: the approver changed the arguments.
	Edited bool `json:"edited,omitempty"`
	// Interrupt is what the session waits on: the approval while pending,
	// the caller's result once approved; nil once decided and done.
	Interrupt *Interrupt `json:"interrupt,omitempty"`
	// Reason is the rejection's, or why it expired.
	Reason string `json:"reason,omitempty"`
	// Owner is who asked: the session's owner.
	Owner string `json:"owner,omitempty"`
	// Actor is who decided (for an expiry, {"name":"cairn","role":"expiry"}).
	Actor *Actor `json:"actor,omitempty"`
	// Result is what the caller's function did, once recorded.
	Result    *CallResult    `json:"result,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
	// ExpiresAt is when the approval stops waiting, when it does.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
}

// CallResult is what a caller's function did after its approval: its
// output (any JSON value), or the error it ended with.
type CallResult struct {
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// ApprovalStatus is where an approval request stands.
type ApprovalStatus string

// Approval request statuses.
const (
	// ApprovalPending: nobody has decided yet.
	ApprovalPending ApprovalStatus = "pending"
	// ApprovalApproved: the call may run, with CallApproval.Arguments.
	ApprovalApproved ApprovalStatus = "approved"
	// ApprovalRejected: a person said no (CallApproval.Reason).
	ApprovalRejected ApprovalStatus = "rejected"
	// ApprovalExpired: nobody decided in time; the call must not run.
	ApprovalExpired ApprovalStatus = "expired"
	// ApprovalCancelled: the request's session was cancelled.
	ApprovalCancelled ApprovalStatus = "cancelled"
)

// Decided reports whether s is final: the caller may act on it.
func (s ApprovalStatus) Decided() bool { return s != ApprovalPending }
