package cairn_test

import (
	"context"
	"path/filepath"
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
	var opts []cairn.ToolOption
	if approval {
		opts = append(opts, cairn.RequireApproval())
	}
	tool := cairn.NewTool("lookup", "Look up.", func(ctx context.Context, a benchArgs) (string, error) { return "ok", nil }, opts...)
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "lookup", Arguments: `{"q":"x"}`}}}, scripted.Reply{Text: "done"})
	r, err := cairn.NewRunner(cairn.RunnerOptions{Store: st, Agents: []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{tool}}}})
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
