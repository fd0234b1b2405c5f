package local

import (
	"context"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// TurnOptions are cairn.TurnOptions (documented there), which convert to
// them.
type TurnOptions struct {
	Actor       session.Actor
	Observe     func(session.Event)
	ClientTools []model.ToolDefinition
}

// apply returns ctx carrying the observer, and the actor.
func (o *TurnOptions) apply(ctx context.Context) (context.Context, session.Actor) {
	if o == nil {
		return ctx, session.Actor{}
	}
	return withObserver(ctx, o.Observe), o.Actor
}

// observerKey carries a call's Observe down to the commits and model calls
// of its turn: the driver's internal plumbing, set only from the options.
type observerKey struct{}

func withObserver(ctx context.Context, fn func(session.Event)) context.Context {
	if fn == nil {
		return ctx
	}
	return context.WithValue(ctx, observerKey{}, fn)
}

// observe delivers ev to the observer of the call running ctx, if any.
func observe(ctx context.Context, ev session.Event) {
	if fn, ok := ctx.Value(observerKey{}).(func(session.Event)); ok {
		fn(ev)
	}
}
