package local

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/session"
)

// meterName names the runner's instruments' scope.
const meterName = "github.com/cairnhq/cairn"

// metrics are a runner's OpenTelemetry instruments (RunnerOptions.MeterProvider);
// a runner without a provider has none and pays nothing.
type metrics struct {
	turns     metric.Int64Counter
	decisions metric.Int64Counter
	model     metric.Float64Histogram
	tool      metric.Float64Histogram
	commit    metric.Float64Histogram
	cache     metric.Int64Counter
	takeovers metric.Int64Counter
	purged    metric.Int64Counter
}

func newMetrics(mp metric.MeterProvider) (*metrics, error) {
	if mp == nil {
		return nil, nil
	}
	m := mp.Meter(meterName)
	// Seconds, from half a millisecond (a commit) to a minute (a slow model).
	buckets := metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
	var x metrics
	var err error
	if x.turns, err = m.Int64Counter("cairn.turns", metric.WithDescription("Turns that ended or paused, by outcome (paused, completed, failed, cancelled, interrupted).")); err != nil {
		return nil, err
	}
	if x.decisions, err = m.Int64Counter("cairn.decisions", metric.WithDescription("Decisions recorded, by interrupt kind and action (approve, reject, answer); expiries have the actor role expiry.")); err != nil {
		return nil, err
	}
	if x.model, err = m.Float64Histogram("cairn.model.duration", metric.WithUnit("s"), buckets, metric.WithDescription("Model calls, by agent and outcome.")); err != nil {
		return nil, err
	}
	if x.tool, err = m.Float64Histogram("cairn.tool.duration", metric.WithUnit("s"), buckets, metric.WithDescription("Tool calls, by tool and outcome.")); err != nil {
		return nil, err
	}
	if x.commit, err = m.Float64Histogram("cairn.commit.duration", metric.WithUnit("s"), buckets, metric.WithDescription("Appends of a step's events to the store, until durable.")); err != nil {
		return nil, err
	}
	if x.cache, err = m.Int64Counter("cairn.state_cache", metric.WithDescription("Session state loads, by result: hit (the cached state was current) or miss (read from the store).")); err != nil {
		return nil, err
	}
	if x.takeovers, err = m.Int64Counter("cairn.takeovers", metric.WithDescription("Running sessions taken over after their owner's lease expired.")); err != nil {
		return nil, err
	}
	if x.purged, err = m.Int64Counter("cairn.sessions.purged", metric.WithDescription("Finished sessions deleted for good (retention, or Runner.Purge), by status.")); err != nil {
		return nil, err
	}
	return &x, nil
}

// outcomeAttr is outcome="ok" or "error".
func outcomeAttr(failed bool) attribute.KeyValue {
	if failed {
		return attribute.String("outcome", "error")
	}
	return attribute.String("outcome", "ok")
}

// committed counts the turns and decisions of a commit's events, read from
// the step's payloads (decoded only for a step that came without them).
//
// Turns and decisions are counted per tenant (the label is "" for the
// default tenant): tenants are a set an operator configures, so the label
// stays small.
func (m *metrics) committed(ctx context.Context, tenant string, step engine.Step, took time.Duration) {
	if m == nil {
		return
	}
	m.commit.Record(ctx, took.Seconds())
	for i, ev := range step.Events {
		// A filter of event types: only the events a metric counts.
		//exhaustive:ignore
		switch ev.Type {
		case session.EventTurnPaused, session.EventTurnCompleted, session.EventTurnFailed, session.EventTurnCancelled, session.EventTurnInterrupted:
			m.turns.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", string(ev.Type[len("turn_"):])), attribute.String("tenant", tenant)))
		case session.EventDecision:
			p, _ := engine.Payload(step.Events, step.Payloads, i)
			if d, ok := p.(*engine.DecisionMade); ok {
				m.decisions.Add(ctx, 1, metric.WithAttributes(attribute.String("kind", string(d.Kind)), attribute.String("action", string(d.Action)), attribute.String("role", d.Actor.Role), attribute.String("tenant", tenant)))
			}
		}
	}
}

func (m *metrics) modelCall(ctx context.Context, agent string, took time.Duration, failed bool) {
	if m != nil {
		m.model.Record(ctx, took.Seconds(), metric.WithAttributes(attribute.String("agent", agent), outcomeAttr(failed)))
	}
}

func (m *metrics) toolCall(ctx context.Context, tool string, took time.Duration, failed bool) {
	if m != nil {
		m.tool.Record(ctx, took.Seconds(), metric.WithAttributes(attribute.String("tool", tool), outcomeAttr(failed)))
	}
}

func (m *metrics) cacheLoad(ctx context.Context, hit bool) {
	if m == nil {
		return
	}
	result := "miss"
	if hit {
		result = "hit"
	}
	m.cache.Add(ctx, 1, metric.WithAttributes(attribute.String("result", result)))
}

func (m *metrics) tookOver(ctx context.Context, n int) {
	if m != nil && n > 0 {
		m.takeovers.Add(ctx, int64(n))
	}
}
