package main

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/cairnhq/cairn/store"
)

// promMetrics is what GET /metrics serves: the runner's and the server's
// OpenTelemetry metrics through the Prometheus exporter, and the Go
// runtime's and the process's.
type promMetrics struct {
	provider *sdkmetric.MeterProvider
	handler  http.Handler
}

func newPromMetrics() (*promMetrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, err
	}
	return &promMetrics{provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)),
		handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}, nil
}

// batchStats is implemented by stores that group commits (store/sqlite,
// store/postgres).
type batchStats interface {
	Stats() (commits, writes int64)
}

// observeStore exports a grouping store's commits and writes:
// writes/commits is the mean batch.
func (p *promMetrics) observeStore(st store.Store) error {
	bs, ok := st.(batchStats)
	if !ok {
		return nil
	}
	m := p.provider.Meter("github.com/cairnhq/cairn/store")
	commits, err := m.Int64ObservableCounter("cairn.store.commits", metric.WithDescription("Transactions of the store's writer (group commit)."))
	if err != nil {
		return err
	}
	writes, err := m.Int64ObservableCounter("cairn.store.writes", metric.WithDescription("Writes those transactions held; writes/commits is the mean batch."))
	if err != nil {
		return err
	}
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		c, w := bs.Stats()
		o.ObserveInt64(commits, c)
		o.ObserveInt64(writes, w)
		return nil
	}, commits, writes)
	return err
}

func (p *promMetrics) Shutdown(ctx context.Context) error { return p.provider.Shutdown(ctx) }
