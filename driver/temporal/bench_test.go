package temporal_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/cairnhq/cairn"
	ctemporal "github.com/cairnhq/cairn/driver/temporal"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/internal/testkit/temporaltest"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/sqlite"
)

// benchStore is the store both drivers use: PostgreSQL when
// CAIRN_TEST_POSTGRES is set, else a SQLite file.
func benchStore(b *testing.B) (store.Store, string) {
	ctx := context.Background()
	if url := os.Getenv("CAIRN_TEST_POSTGRES"); url != "" {
		st, err := postgres.Open(ctx, url)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st, "postgres"
	}
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st, "sqlite"
}

func benchAgents() []*cairn.Agent {
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, a deployArgs) (string, error) { return "deployed to " + a.Env, nil })
	return []*cairn.Agent{{Name: "ops", Tools: []*cairn.Tool{deploy}, Model: scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"prod"}`}}},
		scripted.Reply{Text: "{{.LastResult}}"})}}
}

// pauseResume is one session: start → paused, approve → completed.
type pauseResume func(ctx context.Context, id string) error

// clients is how many sessions run at once: -cpu N with
// CAIRN_BENCH_PARALLELISM (default 4) clients per CPU.
func runPauseResume(b *testing.B, do pauseResume) {
	ctx := context.Background()
	var n atomic.Int64
	prefix := fmt.Sprintf("bench-%d-%d", os.Getpid(), time.Now().UnixNano())
	b.ReportAllocs()
	par := 4
	if v, err := strconv.Atoi(os.Getenv("CAIRN_BENCH_PARALLELISM")); err == nil && v > 0 {
		par = v
	}
	b.SetParallelism(par)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := do(ctx, fmt.Sprintf("%s-%d", prefix, n.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sessions/s")
}

// BenchmarkPauseResume measures a session that pauses for an approval and
// completes once approved, with the in-process driver and on Temporal
// (dev server, one worker in this process), on the same store, side by
// side in one run: go test -bench PauseResume ./driver/temporal.
func BenchmarkPauseResume(b *testing.B) {
	b.Run("local", func(b *testing.B) {
		st, name := benchStore(b)
		b.Logf("store %s", name)
		r := newRunner(b, benchAgents(), &cairn.RunnerOptions{Store: st, Logger: quiet()})
		runPauseResume(b, func(ctx context.Context, id string) error {
			s, err := r.Start(ctx, "ops", "ship it", &cairn.StartOptions{ID: id})
			if err != nil {
				return err
			}
			_, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
			return err
		})
	})
	b.Run("temporal", func(b *testing.B) {
		addr := temporaltest.Server(b)
		st, name := benchStore(b)
		b.Logf("store %s", name)
		ctx := context.Background()
		c, err := ctemporal.Dial(ctx, ctemporal.ClientOptions{HostPort: addr, Namespace: "default", Blobs: st.(store.Blobs), Logger: quiet()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close) // after the worker stops
		r := newRunner(b, benchAgents(), &cairn.RunnerOptions{Store: st, Driver: ctemporal.NewDriver(c, "bench"), Logger: quiet()})
		startWorker(b, c, "bench", r)
		var last atomic.Value
		runPauseResume(b, func(ctx context.Context, id string) error {
			s, err := r.Start(ctx, "ops", "ship it", &cairn.StartOptions{ID: id})
			if err != nil {
				return err
			}
			_, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
			last.Store(id)
			return err
		})
		b.StopTimer()
		// The history one such session leaves: events and bytes, per step
		// (a step: one commit of the session's log; this session has 5).
		h := history(b, c, last.Load().(string))
		evs := check.Events(b)(r.Events(ctx, last.Load().(string), 0))
		steps := 5.0
		b.ReportMetric(float64(len(h.Events))/steps, "history-events/step")
		b.ReportMetric(float64(proto.Size(h))/steps, "history-B/step")
		b.ReportMetric(float64(len(evs)), "log-events")
	})
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
