package temporal_test

import (
	"context"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairnhq/cairn"
	ctemporal "github.com/cairnhq/cairn/driver/temporal"
)

// newRunner is a runner for agents; it closes with the test.
func newRunner(tb testing.TB, agents []*cairn.Agent, opts *cairn.RunnerOptions) *cairn.Runner {
	tb.Helper()
	r, err := cairn.NewRunner(agents, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}

// startWorker runs a worker for r on queue until the test ends.
func startWorker(tb testing.TB, c client.Client, queue string, r *cairn.Runner) {
	tb.Helper()
	w := ctemporal.NewWorker(c, queue, r, nil)
	if err := w.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(w.Stop)
}

// history reads a workflow's whole history.
func history(tb testing.TB, c client.Client, id string) *historypb.History {
	tb.Helper()
	var h historypb.History
	it := c.GetWorkflowHistory(context.Background(), id, "", false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			tb.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	return &h
}

type deployArgs struct {
	Env string `json:"env"`
}
