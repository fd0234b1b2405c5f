package runtime

import (
	"context"
)

// TurnOptions are cairn.TurnOptions (documented there), which convert to
// them.
type TurnOptions struct {
	Actor   Actor
	Observe func(Event)
}

// apply returns ctx carrying the observer, and the actor.
func (o *TurnOptions) apply(ctx context.Context) (context.Context, Actor) {
	if o == nil {
		return ctx, Actor{}
	}
	return withObserver(ctx, o.Observe), o.Actor
}

// observerKey carries a call's Observe down to the commits and model calls
// of its turn: the driver's internal plumbing, set only from the options.
type observerKey struct{}

func withObserver(ctx context.Context, fn func(Event)) context.Context {
	if fn == nil {
		return ctx
	}
	return context.WithValue(ctx, observerKey{}, fn)
}

// observe delivers ev to the observer of the call running ctx, if any.
func observe(ctx context.Context, ev Event) {
	if fn, ok := ctx.Value(observerKey{}).(func(Event)); ok {
		fn(ev)
	}
}
