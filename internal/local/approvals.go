package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/schema"
	"github.com/cairnhq/cairn/session"
)

// ApprovalRequest is cairn.ApprovalRequest.
type ApprovalRequest struct {
	Agent          string
	Tool           string
	Arguments      json.RawMessage
	Message        string
	Schema         json.RawMessage
	IdempotencyKey string
	ExpiresIn      time.Duration
	Metadata       map[string]any
}

// requestCallID is the id of a direct session's one call.
const requestCallID = "call"

// Bounds of an approval request: what a person reads, and what a caller
// may make a store keep.
const (
	maxRequestMessage = 8 << 10
	maxRequestKey     = 256
)

var requestToolName = regexp.MustCompile(`^[A-Za-z0-9_.:/-]{1,128}$`)

// RequestApproval is cairn.Runner.RequestApproval (documented there).
func (r *Runner) RequestApproval(ctx context.Context, req ApprovalRequest, opts *StartOptions) (a *session.CallApproval, created bool, err error) {
	if opts == nil {
		opts = &StartOptions{}
	}
	call, err := r.checkRequest(&req)
	if err != nil {
		return nil, false, err
	}
	o := *opts
	o.Call, o.Metadata = call, req.Metadata
	o.ID = "apr_" + strings.TrimPrefix(r.newID(), "ses_")
	if req.IdempotencyKey != "" {
		// The same caller's same key names the same request, on every
		// replica: a restarted caller finds it instead of asking twice.
		o.ID = requestID(o.firstActor(), opts.Owner, req.IdempotencyKey)
	}
	text := req.Message
	if text == "" {
		text = "approval requested for " + req.Tool
	}
	_, err = r.Start(ctx, req.Agent, text, &o)
	if err == nil {
		a, err = r.CallApproval(ctx, o.ID)
		return a, true, err
	}
	if req.IdempotencyKey == "" || session.CodeOf(err) != session.CodeConflict {
		return nil, false, err
	}
	a, rerr := r.CallApproval(ctx, o.ID)
	if rerr != nil {
		if session.CodeOf(rerr) == session.CodeNotFound {
			return nil, false, &session.Error{Code: session.CodeConflict, Message: fmt.Sprintf("idempotency_key %q named a request that has since been purged; use a new key", req.IdempotencyKey), Err: err}
		}
		return nil, false, rerr
	}
	if a.Tool != req.Tool || !sameRequestedArgs(ctx, r, o.ID, call.Arguments) {
		return nil, false, &session.Error{Code: session.CodeConflict, Message: fmt.Sprintf("idempotency_key %q was used for another request (tool %s with other arguments): a key names one request; use a new key", req.IdempotencyKey, a.Tool)}
	}
	return a, false, nil
}

// requestID is the session id of a caller's idempotency key: the same for
// the same tenant, owner and key, and nobody else's.
func requestID(actor session.Actor, owner, key string) string {
	h := sha256.New()
	for _, part := range []string{actor.Tenant, owner, key} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	return "apr_" + hex.EncodeToString(h.Sum(nil)[:16])
}

// checkRequest checks an approval request and returns its call: a refused
// request records nothing.
func (r *Runner) checkRequest(req *ApprovalRequest) (*session.CallRequest, error) {
	bad := func(format string, args ...any) error {
		return &session.Error{Code: session.CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
	}
	if req.Agent == "" {
		req.Agent = ApprovalsAgent
	}
	a := r.agents[req.Agent]
	switch {
	case a == nil:
		return nil, &session.Error{Code: session.CodeUnknownAgent, Message: fmt.Sprintf("no agent %q takes approval requests (the approvals agent is added by the configuration file, or by cairn.ApprovalsAgent)", req.Agent)}
	case !a.Direct:
		return nil, bad("agent %q answers messages; approval requests go to a direct agent such as %q", req.Agent, ApprovalsAgent)
	case !requestToolName.MatchString(req.Tool):
		return nil, bad("tool: %q is not a tool name (1–128 letters, digits and _ . : / -)", req.Tool)
	case len(req.Message) > maxRequestMessage:
		return nil, bad("message: %d bytes; at most %d", len(req.Message), maxRequestMessage)
	case len(req.IdempotencyKey) > maxRequestKey:
		return nil, bad("idempotency_key: %d bytes; at most %d", len(req.IdempotencyKey), maxRequestKey)
	case req.ExpiresIn < 0:
		return nil, bad("expires_in: %s is negative; give how long the request waits, like 1h", req.ExpiresIn)
	}
	args := req.Arguments
	if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, &session.Error{Code: session.CodeInvalidArguments, Message: fmt.Sprintf("arguments: not valid JSON: %v", err)}
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, &session.Error{Code: session.CodeInvalidArguments, Message: "arguments: must be a JSON object (the call's named arguments)"}
	}
	call := &session.CallRequest{ID: requestCallID, Tool: req.Tool, Arguments: compact(args), Message: req.Message}
	if len(req.Schema) > 0 && string(req.Schema) != "null" {
		compiled, err := schema.Compile(req.Schema)
		if err != nil {
			return nil, bad("schema: %v", err)
		}
		if err := schema.Validate(compiled, v); err != nil {
			return nil, &session.Error{Code: session.CodeInvalidArguments, Message: fmt.Sprintf("arguments do not match the request's schema: %v", err)}
		}
		call.Schema = compact(req.Schema)
	}
	if req.ExpiresIn > 0 {
		at := r.now().Add(req.ExpiresIn).UTC()
		call.ExpiresAt = &at
	}
	return call, nil
}

func compact(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

// sameRequestedArgs reports whether session id's request asked for args.
func sameRequestedArgs(ctx context.Context, r *Runner, id string, args json.RawMessage) bool {
	evs, err := r.store.Events(ctx, id, 0)
	if err != nil {
		return false
	}
	for _, ev := range evs {
		if ev.Type != session.EventUserMessage {
			continue
		}
		p, err := session.DecodeEvent(ev)
		if m, ok := p.(*session.UserMessage); err == nil && ok && m.Call != nil {
			return sameJSON(m.Call.Arguments, args)
		}
	}
	return false
}

// sameJSON reports whether two JSON texts are the same value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// ApprovalsAgent is the name of the direct agent that takes approval
// requests by default (POST /v1/approvals).
const ApprovalsAgent = "approvals"

// CallApproval is cairn.Runner.CallApproval (documented there).
func (r *Runner) CallApproval(ctx context.Context, id string) (*session.CallApproval, error) {
	a, _, err := r.callApproval(ctx, id)
	return a, err
}

// callApproval reads request id as of its head's seq (also returned):
// the events a commit adds between the two reads are left for the next.
func (r *Runner) callApproval(ctx context.Context, id string) (*session.CallApproval, int64, error) {
	s, err := r.Session(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	evs, err := r.store.Events(ctx, id, 0)
	if err != nil {
		return nil, 0, storeError(err, id)
	}
	for i, ev := range evs {
		if ev.Seq > s.Seq {
			evs = evs[:i]
			break
		}
	}
	a, err := CallApprovalOf(s, evs)
	return a, s.Seq, err
}

// CallApprovalOf reads where the approval of a direct session's call
// stands from the session and its events: the one reading every door
// shows.
func CallApprovalOf(s *session.Session, events []session.Event) (*session.CallApproval, error) {
	a := &session.CallApproval{ID: s.ID, SessionID: s.ID, Status: session.ApprovalPending, Owner: s.Owner, Metadata: s.Metadata, CreatedAt: s.CreatedAt}
	found := false
	for _, ev := range events {
		p, err := session.DecodeEvent(ev)
		if err != nil {
			return nil, fmt.Errorf("session %s: event %d: %w", s.ID, ev.Seq, err)
		}
		switch p := p.(type) {
		case *session.UserMessage:
			if p.Call != nil && !found {
				found = true
				a.Tool, a.Arguments, a.ExpiresAt = p.Call.Tool, p.Call.Arguments, p.Call.ExpiresAt
			}
		case *session.InterruptRequested:
			if ev.Type == session.EventApprovalRequested {
				// Asked (again, after an expiry that asks again): pending.
				a.Status, a.Reason, a.Actor, a.DecidedAt = session.ApprovalPending, "", nil, nil
				a.ExpiresAt = p.Interrupt.ExpiresAt
			}
		case *session.ToolStarted:
			if a.Status == session.ApprovalPending && a.Actor == nil {
				// It ran without anyone's approval: its policy asked nobody.
				a.Status = session.ApprovalApproved
			}
		case *session.ToolResult:
			// A tool run here (not by the caller): its result, once approved.
			if a.Status == session.ApprovalApproved && a.Result == nil {
				if p.IsError {
					a.Result = &session.CallResult{Error: p.Content}
				} else {
					out, _ := json.Marshal(p.Content)
					a.Result = &session.CallResult{Output: out}
				}
			}
		case *session.DecisionMade:
			switch {
			case p.Kind == session.KindApproval && (p.Action == session.ActionApprove || p.Action == session.ActionReject):
				actor, at := p.Actor, ev.Time
				a.Actor, a.DecidedAt, a.Reason = &actor, &at, p.Reason
				a.Status = session.ApprovalRejected
				if p.Action == session.ActionApprove {
					a.Status, a.Reason = session.ApprovalApproved, ""
					if len(p.NewArgs) > 0 {
						a.Arguments, a.Edited = p.NewArgs, true
					}
				} else if actor.Role == "expiry" {
					a.Status = session.ApprovalExpired
				}
			case p.Action == session.ActionComplete:
				a.Result = &session.CallResult{Output: p.Output}
			case p.Action == session.ActionFail:
				a.Result = &session.CallResult{Error: p.Reason}
			}
		}
	}
	if !found {
		return nil, &session.Error{Code: session.CodeNotFound, Message: fmt.Sprintf("session %s is not an approval request (its agent %q answers messages)", s.ID, s.Agent)}
	}
	if a.Status == session.ApprovalPending && s.Status == session.StatusCancelled {
		a.Status = session.ApprovalCancelled
	}
	if len(s.Interrupts) > 0 {
		in := s.Interrupts[0]
		a.Interrupt = &in
	}
	return a, nil
}

// NeedsApproval is cairn.Runner.NeedsApproval (documented there).
func (r *Runner) NeedsApproval(agent, tool string, args json.RawMessage) (bool, error) {
	c := r.compiled.Load()
	t := c.tools[agent][tool]
	if t == nil {
		return false, &session.Error{Code: session.CodeInvalidRequest, Message: fmt.Sprintf("agent %q has no tool %q", agent, tool)}
	}
	if t.Engine.NeedsApproval == nil {
		return false, nil
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return true, nil // the engine refuses it; a person would see why
	}
	asks, err := t.Engine.NeedsApproval(engine.ToolArgs{Raw: args, Value: v})
	return asks || err != nil, nil // a policy that fails asks (fail closed)
}

// AwaitCallApproval is cairn.Runner.AwaitCallApproval (documented there).
func (r *Runner) AwaitCallApproval(ctx context.Context, id string, wait time.Duration) (*session.CallApproval, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		a, seq, err := r.callApproval(ctx, id)
		if err != nil && ctx.Err() != nil {
			return r.awaited(ctx, id, err)
		}
		if err != nil || a.Status.Decided() {
			return a, err
		}
		// Wait for the session's next event, from any replica (the
		// store's feed), then read again.
		events, stop := r.Subscribe(id, seq)
		select {
		case <-events:
			stop()
		case <-ctx.Done():
			stop()
			return r.awaited(ctx, id, nil)
		}
	}
}

// awaited ends a wait: at its deadline, the request as it stands (still
// pending); on another error, that error.
func (r *Runner) awaited(ctx context.Context, id string, err error) (*session.CallApproval, error) {
	if ctx.Err() == nil || (err != nil && !errors.Is(err, context.DeadlineExceeded)) {
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	return r.CallApproval(context.WithoutCancel(ctx), id)
}

// RecordCallResult is cairn.Runner.RecordCallResult (documented there).
func (r *Runner) RecordCallResult(ctx context.Context, id string, c Completion, opts *TurnOptions) (*session.CallApproval, error) {
	a, err := r.CallApproval(ctx, id)
	if err != nil {
		return nil, err
	}
	switch {
	case a.Result != nil:
		return nil, &session.Error{Code: session.CodeConflict, Message: fmt.Sprintf("approval %s has its result already; a call's result is recorded once", id)}
	case a.Status != session.ApprovalApproved:
		return nil, &session.Error{Code: session.CodeConflict, Message: fmt.Sprintf("approval %s is %s: only an approved call has a result to record", id, a.Status)}
	case a.Interrupt == nil || a.Interrupt.Kind != session.KindClient:
		return nil, &session.Error{Code: session.CodeConflict, Message: fmt.Sprintf("approval %s does not wait for its caller's result", id)}
	}
	// A function may return nothing: its result is null, which a waiting
	// call's completion otherwise refuses (a missing output).
	d := session.Decision{InterruptID: a.Interrupt.ID, Action: session.ActionComplete, Output: json.RawMessage("null")}
	if c.Error != "" || (len(c.Output) > 0 && string(c.Output) != "null") {
		if d, err = c.decision(a.Interrupt.ID); err != nil {
			return nil, err
		}
	}
	if _, err := r.complete(ctx, id, d, opts); err != nil {
		return nil, err
	}
	return r.CallApproval(ctx, id)
}
