package cairn_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

type benchArgs struct {
	Q string `json:"q"`
}

func benchRunner(b *testing.B, st store.Store, approval bool) *cairn.Runner {
	return benchRunnerOpts(b, cairn.RunnerOptions{Store: st}, approval)
}

func benchRunnerOpts(b *testing.B, opts cairn.RunnerOptions, approval bool) *cairn.Runner {
	var toolOpts []cairn.ToolOption
	if approval {
		toolOpts = append(toolOpts, cairn.RequireApproval())
	}
	tool := cairn.NewTool("lookup", "Look up.", func(ctx context.Context, a benchArgs) (string, error) { return "ok", nil }, toolOpts...)
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "lookup", Arguments: `{"q":"x"}`}}}, scripted.Reply{Text: "done"})
	opts.Agents = []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{tool}}}
	r, err := cairn.NewRunner(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

// BenchmarkTurn: one turn in memory (model asks for a tool, tool runs, model answers).
func BenchmarkTurn(b *testing.B) {
	ctx := context.Background()
	r := benchRunner(b, store.NewMemory(), false)
	b.ReportAllocs()
	for b.Loop() {
		if s, err := r.Start(ctx, "main", "go", nil); err != nil || s.Status != cairn.StatusCompleted {
			b.Fatal(err, s)
		}
	}
}

func benchPauseResume(b *testing.B, st store.Store) {
	ctx := context.Background()
	r := benchRunner(b, st, true)
	b.ReportAllocs()
	for b.Loop() {
		s, err := r.Start(ctx, "main", "go", nil)
		if err != nil {
			b.Fatal(err)
		}
		s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}})
		if err != nil || s.Status != cairn.StatusCompleted {
			b.Fatal(err, s)
		}
	}
}

// BenchmarkPauseResumeMemory: a turn that pauses for approval, then the approval and the rest of the turn.
func BenchmarkPauseResumeMemory(b *testing.B) { benchPauseResume(b, store.NewMemory()) }

// BenchmarkPauseResumeSQLite: the same on a real SQLite file (WAL, synchronous=FULL).
func BenchmarkPauseResumeSQLite(b *testing.B) {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	benchPauseResume(b, st)
}

// countingStore counts the bytes each Append writes (events and head).
type countingStore struct {
	store.Store
	bytes atomic.Int64
}

func (c *countingStore) Append(ctx context.Context, h store.Head, expected int64, evs []store.Event) error {
	n := len(h.Summary)
	for _, e := range evs {
		n += len(e.Data) + len(e.Type) + len(e.Frame) + len(e.Agent) + 16
	}
	c.bytes.Add(int64(n))
	return c.Store.Append(ctx, h, expected, evs)
}

// BenchmarkStepByHistory: one turn (user message → model → tool → model)
// on a real SQLite file, for sessions with 10, 100 and 1,000 messages of
// history. bytes/step must stay flat: a step appends only its own events.
// Steps rotate over 25 prepared sessions so history grows little while
// measuring (run with -benchtime 50x: 2 steps, 8 messages, per session).
func BenchmarkStepByHistory(b *testing.B) {
	b.Run("cached", func(b *testing.B) { benchStepByHistory(b, 0) })
	// cold: no state cache, as after a restart or with several servers on
	// one store: every step loads the latest snapshot and the log after it.
	b.Run("cold", func(b *testing.B) { benchStepByHistory(b, -1) })
}

func benchStepByHistory(b *testing.B, cached int) {
	const sessions = 25
	for _, history := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("messages=%d", history), func(b *testing.B) {
			ctx := context.Background()
			sq, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer sq.Close()
			cs := &countingStore{Store: sq}
			r := benchRunnerOpts(b, cairn.RunnerOptions{Store: cs, CachedSessions: cached}, false)
			ids := make([]string, sessions)
			for i := range ids {
				s, err := r.Start(ctx, "main", "go", nil)
				if err != nil {
					b.Fatal(err)
				}
				for n := 4; n < history; n += 4 { // each turn adds 4 messages
					if s, err = r.Send(ctx, s.ID, "again, with a message of ordinary length", 0); err != nil {
						b.Fatal(err)
					}
				}
				ids[i] = s.ID
			}
			cs.bytes.Store(0)
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				if _, err := r.Send(ctx, ids[i%sessions], "again, with a message of ordinary length", 0); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(cs.bytes.Load())/float64(b.N), "bytes/step")
		})
	}
}
