package local

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// meterName names the runner's instruments' scope.
const meterName = "github.com/cairnhq/cairn"

// metrics are a runner's OpenTelemetry instruments (RunnerOptions.MeterProvider);
// a runner without a provider has none and pays nothing.
type metrics struct {
	turns     metric.Int64Counter
	decisions metric.Int64Counter
	// waited is the time people took to decide an approval.
	waited    metric.Float64Histogram
	model     metric.Float64Histogram
	tool      metric.Float64Histogram
	commit    metric.Float64Histogram
	cache     metric.Int64Counter
	takeovers metric.Int64Counter
	purged    metric.Int64Counter
	labels    labels
}

// labels keeps the measurement options the instruments record with, one
// per distinct set of label values: metric.WithAttributes sorts, dedups
// and hashes its attributes into a new set at every call, which the
// profile of a server at one client showed as about 2 % of its CPU. The
// values come from the config (agents, tools, tenants) or small enums
// (outcomes, kinds, actions, roles), so there are few sets; past
// maxLabelSets of them a set is built for each use instead of kept.
type labels struct {
	mu   sync.RWMutex
	sets map[labelKey]labelSet
}

// maxLabelSets bounds the sets labels keeps.
const maxLabelSets = 4096

// labelKey names an instrument's label values: of, then its labels' values
// in the order labelKey.attributes gives them names.
type labelKey struct {
	of         labelled
	a, b, c, d string
}

// labelled says which instrument's labels a labelKey holds.
type labelled uint8

const (
	turnLabels     labelled = iota // outcome, tenant
	decisionLabels                 // kind, action, role, tenant
	modelLabels                    // agent, outcome
	toolLabels                     // tool, outcome
	cacheLabels                    // result
	waitedLabels                   // tool, action, tenant
)

// labelSet is one set of labels as the instruments' calls take it.
type labelSet struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

func (k labelKey) attributes() []attribute.KeyValue {
	switch k.of {
	case turnLabels:
		return []attribute.KeyValue{attribute.String("outcome", k.a), attribute.String("tenant", k.b)}
	case decisionLabels:
		return []attribute.KeyValue{attribute.String("kind", k.a), attribute.String("action", k.b), attribute.String("role", k.c), attribute.String("tenant", k.d)}
	case modelLabels:
		return []attribute.KeyValue{attribute.String("agent", k.a), attribute.String("outcome", k.b)}
	case toolLabels:
		return []attribute.KeyValue{attribute.String("tool", k.a), attribute.String("outcome", k.b)}
	case cacheLabels:
		return []attribute.KeyValue{attribute.String("result", k.a)}
	case waitedLabels:
		return []attribute.KeyValue{attribute.String("tool", k.a), attribute.String("action", k.b), attribute.String("tenant", k.c)}
	}
	return nil
}

// of returns the options for k's labels.
func (l *labels) of(k labelKey) labelSet {
	l.mu.RLock()
	s, ok := l.sets[k]
	l.mu.RUnlock()
	if ok {
		return s
	}
	o := metric.WithAttributeSet(attribute.NewSet(k.attributes()...))
	s = labelSet{add: []metric.AddOption{o}, record: []metric.RecordOption{o}}
	l.mu.Lock()
	if l.sets == nil {
		l.sets = map[labelKey]labelSet{}
	}
	if len(l.sets) < maxLabelSets {
		l.sets[k] = s
	}
	l.mu.Unlock()
	return s
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
	// Seconds, from a glance (a rubber stamp) to days.
	waited := metric.WithExplicitBucketBoundaries(1, 2, 5, 10, 30, 60, 300, 900, 3600, 4*3600, 24*3600, 3*24*3600)
	if x.waited, err = m.Float64Histogram("cairn.approval.time_to_decision", metric.WithUnit("s"), waited,
		metric.WithDescription("How long a person took to decide an approval (asked to decided), by tool, action and tenant; standing rules and expiries are not people.")); err != nil {
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

// outcomeLabel is "ok" or "error".
func outcomeLabel(failed bool) string {
	if failed {
		return "error"
	}
	return "ok"
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
			m.turns.Add(ctx, 1, m.labels.of(labelKey{of: turnLabels, a: string(ev.Type[len("turn_"):]), b: tenant}).add...)
		case session.EventDecision:
			p, _ := engine.Payload(step.Events, step.Payloads, i)
			if d, ok := p.(*engine.DecisionMade); ok {
				m.decisions.Add(ctx, 1, m.labels.of(labelKey{of: decisionLabels, a: string(d.Kind), b: string(d.Action), c: d.Actor.Role, d: tenant}).add...)
			}
		}
	}
}

// decided records the time people took to decide the approvals of a
// commit (its decision records).
func (m *metrics) decided(ctx context.Context, records []store.DecisionRecord) {
	if m == nil {
		return
	}
	for _, d := range records {
		if d.Rule != "" || d.Expired || d.AskedAt.IsZero() {
			continue
		}
		m.waited.Record(ctx, d.DecidedAt.Sub(d.AskedAt).Seconds(), m.labels.of(labelKey{of: waitedLabels, a: d.Tool, b: string(d.Action), c: d.Tenant}).record...)
	}
}

func (m *metrics) modelCall(ctx context.Context, agent string, took time.Duration, failed bool) {
	if m != nil {
		m.model.Record(ctx, took.Seconds(), m.labels.of(labelKey{of: modelLabels, a: agent, b: outcomeLabel(failed)}).record...)
	}
}

func (m *metrics) toolCall(ctx context.Context, tool string, took time.Duration, failed bool) {
	if m != nil {
		m.tool.Record(ctx, took.Seconds(), m.labels.of(labelKey{of: toolLabels, a: tool, b: outcomeLabel(failed)}).record...)
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
	m.cache.Add(ctx, 1, m.labels.of(labelKey{of: cacheLabels, a: result}).add...)
}

func (m *metrics) tookOver(ctx context.Context, n int) {
	if m != nil && n > 0 {
		m.takeovers.Add(ctx, int64(n))
	}
}
