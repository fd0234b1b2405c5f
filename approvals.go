package cairn

import (
	"context"
	"encoding/json"
	"time"

	"github.com/cairnhq/cairn/internal/local"
	"github.com/cairnhq/cairn/session"
)

// ApprovalsAgentName is the name of the agent that takes approval
// requests by default (ApprovalsAgent, POST /v1/approvals).
const ApprovalsAgentName = local.ApprovalsAgent

// Approval request statuses (CallApproval.Status).
const (
	ApprovalPending   = session.ApprovalPending
	ApprovalApproved  = session.ApprovalApproved
	ApprovalRejected  = session.ApprovalRejected
	ApprovalExpired   = session.ApprovalExpired
	ApprovalCancelled = session.ApprovalCancelled
)

// ApprovalsAgent returns the direct agent that takes approval requests
// for calls their callers make themselves (RequestApproval): every call
// waits for a person under approvers and escalation (either may be nil),
// then for the caller's result. The configuration file adds it, as
// "approvals", with its approvals section.
func ApprovalsAgent(approvers *Approvers, escalation *Escalation) *Agent {
	return &Agent{Name: ApprovalsAgentName, Direct: true, CallerTools: true, Approvers: approvers, Escalation: escalation}
}

// ApprovalRequest asks a person to approve a call the caller's own code
// makes: a tool name, its arguments, and what the approver reads.
type ApprovalRequest struct {
	// Agent is the direct agent that takes it; "" is ApprovalsAgentName.
	Agent string
	// Tool names the call (any name: 1–128 letters, digits, _ . : / -),
	// and Arguments are its arguments, a JSON object (nil: {}).
	Tool      string
	Arguments json.RawMessage
	// Message is what the approver reads; "" shows the tool and arguments.
	Message string
	// Schema, when set, is the arguments' JSON Schema: the request and an
	// approver's edit must match it.
	Schema json.RawMessage
	// IdempotencyKey, when set, names the request: the same caller asking
	// again with it gets the same request, on any replica.
	IdempotencyKey string
	// ExpiresIn, when positive, is how long it waits for a decision; then
	// it expires (the agent's escalation may decide otherwise).
	ExpiresIn time.Duration
	// Metadata is kept with the request's session.
	Metadata map[string]any
}

// RequestApproval records an approval request as a session of a direct
// agent with one call, paused on its approval interrupt: the inbox,
// webhooks, action links, governance, reminders and audit apply as to any
// call. created is false when IdempotencyKey named an existing request
// (with another tool or other arguments: ErrConflict). opts sets the
// requester (Owner, Actor); its ID and Call are ignored.
func (r *Runner) RequestApproval(ctx context.Context, req ApprovalRequest, opts *StartOptions) (a *CallApproval, created bool, err error) {
	return r.rt.RequestApproval(ctx, local.ApprovalRequest(req), (*local.StartOptions)(opts))
}

// CallApproval reads where approval request id stands (any direct
// agent's session: a gateway call's too).
func (r *Runner) CallApproval(ctx context.Context, id string) (*CallApproval, error) {
	return r.rt.CallApproval(ctx, id)
}

// AwaitCallApproval waits up to wait for approval request id to be
// decided, and returns it as it then stands (still pending when nobody
// decided in time). A decision on any replica sharing the store ends it.
func (r *Runner) AwaitCallApproval(ctx context.Context, id string, wait time.Duration) (*CallApproval, error) {
	return r.rt.AwaitCallApproval(ctx, id, wait)
}

// NeedsApproval reports whether a call of agent's tool with args would
// wait for a person, by the tool's policy (an error in the policy asks):
// what the MCP gateway passes straight through when it does not.
func (r *Runner) NeedsApproval(agent, tool string, args json.RawMessage) (bool, error) {
	return r.rt.NeedsApproval(agent, tool, args)
}

// RecordCallResult records what the caller's function did after its
// approval (c.Output, nil or null when it returned nothing; or c.Error):
// once, for the audit trail and the inbox's history; the request's
// session then completes.
func (r *Runner) RecordCallResult(ctx context.Context, id string, c Completion, opts *TurnOptions) (*CallApproval, error) {
	return r.rt.RecordCallResult(ctx, id, local.Completion(c), opts.rt())
}

// RuleQuery selects the standing rules Runner.Rules lists.
type RuleQuery = session.RuleQuery

// Rules lists the standing rules actor may see: those of their tenant
// (every tenant's for a global actor or the program), live ones unless
// q.All. Approvers and admins list rules; anyone else is refused
// (ErrForbidden). The store must keep rules (the stores of this module
// do).
func (r *Runner) Rules(ctx context.Context, actor Actor, q RuleQuery) ([]Rule, error) {
	return r.rt.Rules(ctx, actor, q)
}

// RevokeRule revokes standing rule id at once, for every process on the
// store: a call made after it returns is not decided by it. Any approver
// or admin of its tenant may revoke it (revoking only makes calls ask
// again; anyone else: ErrForbidden); a rule of another tenant is
// ErrNotFound. Revoking a revoked rule returns it as
// it was revoked.
func (r *Runner) RevokeRule(ctx context.Context, actor Actor, id string) (Rule, error) {
	return r.rt.RevokeRule(ctx, actor, id)
}

// Approval analytics (docs/analytics.md).
type (
	// AnalyticsQuery selects what Runner.Analytics counts.
	AnalyticsQuery = session.AnalyticsQuery
	// Analytics are the figures of the approval process, a row per tool,
	// agent or approver.
	Analytics = session.Analytics
	// AnalyticsRow is one row of them.
	AnalyticsRow = session.AnalyticsRow
	// AnalyticsBy is what a row is per.
	AnalyticsBy = session.AnalyticsBy
)

// What analytics rows are per (AnalyticsQuery.By).
const (
	ByTool     = session.ByTool
	ByAgent    = session.ByAgent
	ByApprover = session.ByApprover
)

// Analytics counts the approvals of actor's tenant (every tenant's for a
// global actor or the program) decided in q's range, a row per tool,
// agent or approver: pending, decided, approved, rejected, edited,
// expired, decided by standing rules, the time people took (median, 90th
// percentile), fast approvals and the longest streak of approvals (the
// rubber-stamp signals). One walk of the store's decision records in the
// range (an index on tenant and time) and, for pending, of the paused
// sessions with an approval. Approvers and admins read it (else
// ErrForbidden).
func (r *Runner) Analytics(ctx context.Context, actor Actor, q AnalyticsQuery) (*Analytics, error) {
	return r.rt.Analytics(ctx, actor, q)
}
