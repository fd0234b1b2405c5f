package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/store/sqlite"
)

// previewTools are an approval-gated file write whose dry run is a diff
// (counting its runs) and an approval-gated tool whose dry run never
// returns and ignores its context.
func previewTools(runs *atomic.Int32, writes *atomic.Int32) []*cairn.Tool {
	write := cairn.NewTool(&cairn.Tool{Name: "write_file", Description: "Writes a file.", Approval: cairn.Always(),
		Preview: func(ctx context.Context, args json.RawMessage) (cairn.Preview, error) {
			runs.Add(1)
			var a struct{ Path, Text string }
			if err := json.Unmarshal(args, &a); err != nil {
				return cairn.Preview{}, err
			}
			return cairn.TextPreview(cairn.PreviewDiff, fmt.Sprintf("--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-old\n+%s\n", a.Path, a.Path, a.Text)), nil
		}},
		func(ctx context.Context, a struct {
			Path string `json:"path"`
			Text string `json:"text"`
		}) (string, error) {
			writes.Add(1)
			return "wrote " + a.Path, nil
		})
	hang := cairn.NewTool(&cairn.Tool{Name: "plan", Description: "Applies a plan.", Approval: cairn.Always(), PreviewTimeout: 200 * time.Millisecond,
		Preview: func(ctx context.Context, args json.RawMessage) (cairn.Preview, error) {
			select {} // a dry run that never ends and ignores its context
		}},
		func(ctx context.Context, a struct{}) (string, error) { return "applied", nil })
	return []*cairn.Tool{write, hang}
}

// A preview is computed once, before the pause, stored with its
// interrupt: a restart shows it without running it again; one that hangs
// is cut at its timeout and never blocks the decision.
func TestPreviewsAreComputedOnceAndStored(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	var runs, writes atomic.Int32
	brain := newBrain(func(req *model.Request) model.Message {
		if last(req).Role == model.RoleTool {
			return text("done")
		}
		return model.Message{ToolCalls: []model.ToolCall{
			{ID: "c1", Name: "write_file", Arguments: `{"path":"notes.txt","text":"new"}`},
			{ID: "c2", Name: "plan", Arguments: `{}`},
		}}
	})
	open := func() *cairn.Runner {
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		return runnerFor(t, []*cairn.Agent{{Name: "main", Model: brain, Tools: previewTools(&runs, &writes)}}, &cairn.RunnerOptions{Store: st})
	}
	r := open()
	s, err := r.Start(ctx, "main", "go", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusPaused || len(s.Interrupts) != 2 {
		t.Fatalf("want a pause on two approvals, got %s with %d", s.Status, len(s.Interrupts))
	}
	diff, hung := s.Interrupts[0].Preview, s.Interrupts[1].Preview
	if diff == nil || diff.Format != cairn.PreviewDiff || !strings.Contains(diff.Text(), "+new") {
		t.Fatalf("write_file's preview = %+v, want its diff", diff)
	}
	if hung == nil || !strings.Contains(hung.Error, "timed out after 200ms") {
		t.Fatalf("plan's preview = %+v, want its timeout as its error", hung)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the preview ran %d times before the pause, want 1", n)
	}
	r.Close()

	// Restarted: the stored previews, not new runs.
	r = open()
	got, err := r.Session(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if p := got.Interrupts[0].Preview; p == nil || string(p.Content) != string(diff.Content) {
		t.Fatalf("after a restart the preview is %+v, want the stored %+v", p, diff)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("a restart ran the preview again (%d runs)", n)
	}

	// A preview of edited arguments: checked as a decision's, recorded nowhere.
	before, err := r.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Preview(ctx, s.ID, s.Interrupts[0].ID, json.RawMessage(`{"path":5}`), nil); !errors.Is(err, cairn.ErrInvalidArguments) {
		t.Fatalf("invalid arguments: %v, want ErrInvalidArguments", err)
	}
	p, err := r.Preview(ctx, s.ID, s.Interrupts[0].ID, json.RawMessage(`{"path":"notes.txt","text":"edited"}`), nil)
	if err != nil || !strings.Contains(p.Text(), "+edited") {
		t.Fatalf("preview of an edit = %+v, %v", p, err)
	}
	if _, err := r.Preview(ctx, s.ID, s.Interrupts[1].ID, nil, nil); err != nil {
		t.Fatalf("preview of a call's own arguments: %v", err)
	}
	after, err := r.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("a preview recorded %d events", len(after)-len(before))
	}

	// The decision goes through; each tool runs once.
	done := approveAll(t, r, got)
	if done.Status != cairn.StatusCompleted || writes.Load() != 1 {
		t.Fatalf("after approval: %s, %d writes", done.Status, writes.Load())
	}
}

// A preview is only for a tool whose approval may ask, and one that is
// untrusted output is bounded and made visible.
func TestPreviewNeedsAnApprovalAndIsNormalized(t *testing.T) {
	tool := cairn.NewTool(&cairn.Tool{Name: "t", Preview: func(context.Context, json.RawMessage) (cairn.Preview, error) { return cairn.Preview{}, nil }},
		func(ctx context.Context, a struct{}) (string, error) { return "", nil })
	_, err := cairn.NewRunner([]*cairn.Agent{{Name: "a", Model: newBrain(func(*model.Request) model.Message { return text("x") }), Tools: []*cairn.Tool{tool}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "Approval never asks") {
		t.Fatalf("a preview on a tool that never asks: %v", err)
	}
	long := cairn.TextPreview(cairn.PreviewText, "a\u202eb"+strings.Repeat("é", cairn.MaxPreviewBytes)).Normalize()
	if !long.Truncated || len(long.Text()) > cairn.MaxPreviewBytes+100 || !strings.Contains(long.Text(), "⟨U+202E⟩") {
		t.Fatalf("a long preview with a bidi override: truncated=%v, %d bytes", long.Truncated, len(long.Text()))
	}
	if p := (cairn.Preview{Format: cairn.PreviewJSON, Content: json.RawMessage(`{"a":`)}).Normalize(); p.Error == "" {
		t.Fatalf("invalid JSON content kept: %+v", p)
	}
	if p := (cairn.Preview{Format: "html", Content: json.RawMessage(`"<b>x</b>"`)}).Normalize(); p.Error == "" {
		t.Fatalf("an unknown format kept: %+v", p)
	}
}
