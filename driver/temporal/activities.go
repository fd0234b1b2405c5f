package temporal

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/local"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// Activity names.
const (
	ActivityMirror = "cairn.Mirror"
	ActivityModel  = "cairn.Model"
	ActivityTools  = "cairn.Tools"
	// ActivityPreviews computes the dry runs of approvals about to be
	// asked for (free of side effects: retried like a model call).
	ActivityPreviews = "cairn.Previews"
)

// mirrorArgs are a step's events and the head to store with them.
type mirrorArgs struct {
	Head store.Head
	// Nonce is the session's nonce, which the webhook messages of the
	// events derive their ids from.
	Nonce  string
	Events []cairn.Event
}

// modelArgs are a CallModel effect.
type modelArgs struct {
	SessionID string
	// Seq is the seq of the session's last event when the call starts: its
	// text deltas follow it (0 in histories written before it was added).
	Seq    int64 `json:",omitempty"`
	Effect engine.CallModel
	// Tenant is the session's: the standing rules read with the reply
	// are of its tenant.
	Tenant string `json:",omitempty"`
}

// modelResult is a model call's outcome: a response, or why it failed (a
// failed model call is an outcome the engine records, not an activity
// failure Temporal would retry).
type modelResult struct {
	Response *model.Response      `json:",omitempty"`
	Error    string               `json:",omitempty"`
	Provider *model.ProviderError `json:",omitempty"`
	// Rules are the standing rules live when the reply came, for the
	// tools it calls (engine.ModelDone.Rules): read in the activity, so
	// the workflow's history records them and a replay decides the same.
	Rules []session.Rule `json:",omitempty"`
}

func (m modelResult) failure() error {
	switch {
	case m.Provider != nil:
		return m.Provider
	case m.Error != "":
		return errors.New(m.Error)
	}
	return nil
}

// toolsArgs are a RunTools effect.
type toolsArgs struct {
	Effect engine.RunTools
}

// activities perform a session's effects with a Runner's core: its
// agents' models and tools, its store and webhooks.
type activities struct {
	core      local.Core
	heartbeat time.Duration
}

// Mirror writes a step's events to Cairn's store.
func (a *activities) Mirror(ctx context.Context, in mirrorArgs) error {
	return a.core.Mirror(ctx, in.Head, in.Nonce, in.Events)
}

// Model calls the frame's agent's model.
func (a *activities) Model(ctx context.Context, in modelArgs) (modelResult, error) {
	var resp *model.Response
	var err error
	a.beating(ctx, func(ctx context.Context) { resp, err = a.core.CallModel(ctx, in.SessionID, in.Seq, in.Effect) })
	if ctx.Err() != nil {
		return modelResult{}, ctx.Err() // cancelled: the workflow decides
	}
	if err != nil {
		out := modelResult{Error: err.Error()}
		var pe *model.ProviderError
		if errors.As(err, &pe) {
			out.Provider = pe
		}
		return out, nil
	}
	return modelResult{Response: resp, Rules: a.core.RulesFor(ctx, in.Tenant, in.Effect.Agent, resp.Message.ToolCalls)}, nil
}

// Tools runs a batch of approved or automatic calls.
func (a *activities) Tools(ctx context.Context, in toolsArgs) ([]engine.ToolOutcome, error) {
	var out []engine.ToolOutcome
	a.beating(ctx, func(ctx context.Context) { out = a.core.RunTools(ctx, in.Effect) })
	return out, nil
}

// previewsArgs are a RunPreviews effect.
type previewsArgs struct {
	Effect engine.RunPreviews
}

// Previews computes the dry runs of approvals about to be asked for.
func (a *activities) Previews(ctx context.Context, in previewsArgs) ([]engine.PreviewOutcome, error) {
	var out []engine.PreviewOutcome
	a.beating(ctx, func(ctx context.Context) { out = a.core.RunPreviews(ctx, in.Effect) })
	if ctx.Err() != nil {
		return nil, ctx.Err() // cancelled: the workflow decides
	}
	return out, nil
}

// beating runs fn while heartbeating, so a worker that dies is noticed
// within the heartbeat timeout instead of the activity's whole timeout.
func (a *activities) beating(ctx context.Context, fn func(ctx context.Context)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	t := time.NewTicker(a.heartbeat / 3)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			activity.RecordHeartbeat(ctx)
		}
	}
}
