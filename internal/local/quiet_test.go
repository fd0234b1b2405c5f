package local_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store"
)

// quietRecorder records, per Append, its events' types and whether the
// head was Quiet.
type quietRecorder struct {
	store.Store
	mu      sync.Mutex
	appends []string
}

func (q *quietRecorder) Append(ctx context.Context, h store.Head, expected int64, evs []cairn.Event) error {
	var types []string
	for _, e := range evs {
		types = append(types, string(e.Type))
	}
	line := strings.Join(types, ",")
	if h.Quiet {
		line = "quiet:" + line
	}
	q.mu.Lock()
	q.appends = append(q.appends, line)
	q.mu.Unlock()
	return q.Store.Append(ctx, h, expected, evs)
}

// The commits of a turn inside which a tool runs: the tool's result
// changes nothing a listing shows, so the runner writes it quietly (no
// listing index rewritten); the others, each of which changes the status
// or the view, are loud. The session's update time is its last loud one.
func TestToolResultsCommitQuietly(t *testing.T) {
	ctx := context.Background()
	rec := &quietRecorder{Store: store.NewMemory()}
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "lookup", Arguments: `{"q":"x"}`}}}, scripted.Reply{Text: "done"})
	lookup := cairn.NewTool(&cairn.Tool{Name: "lookup", Description: "Look up."},
		func(ctx context.Context, a struct {
			Q string `json:"q"`
		}) (string, error) {
			return a.Q, nil
		})
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{lookup}}}, &cairn.RunnerOptions{Store: rec})
	s, err := r.Start(ctx, "main", "go", nil)
	if err != nil || s.Status != cairn.StatusCompleted {
		t.Fatalf("%+v %v", s, err)
	}
	var quiet []string
	for _, a := range rec.appends {
		if strings.HasPrefix(a, "quiet:") {
			quiet = append(quiet, a)
		}
	}
	if len(quiet) != 1 || quiet[0] != "quiet:tool_result" {
		t.Fatalf("quiet commits %q of %q, want the tool's result alone", quiet, rec.appends)
	}
	got, err := r.Session(ctx, s.ID)
	if err != nil || !got.UpdatedAt.Equal(s.UpdatedAt) || got.Seq != s.Seq {
		t.Fatalf("stored %v seq %d, returned %v seq %d (%v)", got.UpdatedAt, got.Seq, s.UpdatedAt, s.Seq, err)
	}
}
