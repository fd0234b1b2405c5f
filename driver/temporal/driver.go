package temporal

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/session"
)

// Driver is the API side: a cairn.Driver that starts session workflows and
// sends them updates. Set it as RunnerOptions.Driver of the Runner the HTTP
// server uses; that runner reads the store the workers mirror to.
type Driver struct {
	c         client.Client
	taskQueue string
}

var _ cairn.Driver = (*Driver)(nil)

// NewDriver returns a Driver starting workflows on taskQueue.
func NewDriver(c client.Client, taskQueue string) *Driver {
	return &Driver{c: c, taskQueue: taskQueue}
}

// Start implements cairn.Driver: update-with-start, one round trip that
// starts the workflow (the session id is its workflow id) and waits.
func (d *Driver) Start(ctx context.Context, in driver.Start, detach bool) (*cairn.Session, error) {
	start := d.c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID: in.ID, TaskQueue: d.taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, WorkflowName, params{Start: &engine.Start{SessionID: in.ID, Nonce: in.Nonce, Agent: in.Agent, Text: in.Input, Metadata: in.Metadata, Owner: in.Owner, Actor: in.Actor, Call: in.Call, Tools: in.Tools, Definition: in.Definition}})
	h, err := d.c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{UpdateName: UpdateWait, Args: []any{WaitArgs{Started: detach}},
			WaitForStage: client.WorkflowUpdateStageCompleted},
	})
	if err != nil {
		return nil, fromTemporal(err, in.ID)
	}
	return answer(ctx, h, in.ID)
}

// Resume implements cairn.Driver.
func (d *Driver) Resume(ctx context.Context, id string, in driver.Decide) (*cairn.Session, error) {
	return d.update(ctx, id, UpdateDecide, DecideArgs{Seq: in.Seq, Decisions: in.Decisions, Actor: in.Actor, Batch: in.Batch})
}

// Send implements cairn.Driver.
func (d *Driver) Send(ctx context.Context, id string, msg driver.Message) (*cairn.Session, error) {
	return d.update(ctx, id, UpdateMessage, MessageArgs{Text: msg.Text, Seq: msg.Seq, Actor: msg.Actor, Tools: msg.Tools})
}

// Fork implements cairn.Driver: a new workflow that goes on from the
// fork's state (its log is mirrored already) and waits for a decision or
// a message.
func (d *Driver) Fork(ctx context.Context, in driver.Fork) (*cairn.Session, error) {
	st, _, err := engine.Restore(in.State, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("cairn: the fork's state does not load: %w", err)
	}
	if _, err := d.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: in.ID, TaskQueue: d.taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, WorkflowName, params{Snapshot: in.State}); err != nil {
		return nil, fromTemporal(err, in.ID)
	}
	return st.View(), nil
}

// Cancel implements cairn.Driver.
func (d *Driver) Cancel(ctx context.Context, id string, scope cairn.CancelScope, actor cairn.Actor) (*cairn.Session, error) {
	return d.update(ctx, id, UpdateCancel, CancelArgs{Scope: scope, Actor: actor})
}

func (d *Driver) update(ctx context.Context, id, name string, args any) (*cairn.Session, error) {
	h, err := d.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: name, Args: []any{args},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return nil, fromTemporal(err, id)
	}
	return answer(ctx, h, id)
}

func answer(ctx context.Context, h client.WorkflowUpdateHandle, id string) (*cairn.Session, error) {
	var s cairn.Session
	if err := h.Get(ctx, &s); err != nil {
		return nil, fromTemporal(err, id)
	}
	return &s, nil
}

// fromTemporal turns what Temporal answers into Cairn's errors: a refusal
// keeps its code (conflict, unknown_interrupt, invalid_arguments, …).
func fromTemporal(err error, id string) error {
	var app *temporal.ApplicationError
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &app) && app.Type() != "" && app.Type() != "internal":
		e := &session.Error{Code: session.Code(app.Type()), Message: app.Message(), Err: err}
		var interrupt string
		if app.HasDetails() && app.Details(&interrupt) == nil {
			e.Interrupt = interrupt
		}
		return e
	case errors.As(err, &started):
		return &session.Error{Code: session.CodeConflict, Message: fmt.Sprintf("session %s exists", id), Err: err}
	case errors.As(err, &notFound):
		return &session.Error{Code: session.CodeNotFound, Message: fmt.Sprintf("no session %q", id), Err: err}
	}
	return fmt.Errorf("session %s on Temporal: %w", id, err)
}
