package local_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/model"
)

// The inbox by kind, one kind or several, pages through every pending
// interrupt of those kinds once, newest session first, on every store: a
// session with two of the kinds asked for comes once, with both.
func TestInboxByKindPagesThroughEachKind(t *testing.T) {
	ctx := context.Background()
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, a struct{}) (string, error) { return "deployed", nil })
	ask := cairn.NewTool(&cairn.Tool{Name: "ask", Description: "Ask the user."}, func(ctx context.Context, a struct{}) (string, error) {
		return cairn.Ask(ctx, "Which region?")
	})
	// The user's message names the tools to call at once.
	brain := newBrain(func(req *model.Request) model.Message {
		if l := last(req); l.Role == model.RoleTool {
			return text("done")
		}
		var msg model.Message
		for i, name := range strings.Fields(last(req).Content) {
			msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: fmt.Sprintf("c%d", i), Name: name, Arguments: `{}`})
		}
		return msg
	})
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: brain, Tools: []*cairn.Tool{deploy, ask}}}, &cairn.RunnerOptions{Store: st})
			mine := map[string]bool{}
			want := map[cairn.Kind][]string{} // "session kind" pairs, by kind
			for _, calls := range []string{"deploy", "ask", "deploy", "ask", "deploy ask", "deploy", "ask", "ask deploy", "ask", "deploy", "ask"} {
				s := check.NoErr(t)(r.Start(ctx, "main", calls, nil))
				if s.Status != cairn.StatusPaused || len(s.Interrupts) != len(strings.Fields(calls)) {
					t.Fatalf("%q: %s with %d interrupts", calls, s.Status, len(s.Interrupts))
				}
				mine[s.ID] = true
				for _, in := range s.Interrupts {
					want[in.Kind] = append(want[in.Kind], s.ID+" "+string(in.Kind))
				}
			}
			for _, c := range []struct {
				kinds []cairn.Kind
				limit int
			}{
				{[]cairn.Kind{cairn.KindApproval}, 2}, {[]cairn.Kind{cairn.KindInput}, 3}, {[]cairn.Kind{cairn.KindExternal}, 2},
				{[]cairn.Kind{cairn.KindInput, cairn.KindApproval}, 1}, {[]cairn.Kind{cairn.KindInput, cairn.KindApproval}, 2}, {[]cairn.Kind{cairn.KindApproval, cairn.KindInput}, 3},
			} {
				kinds := c.kinds
				var expected []string
				for _, k := range kinds {
					expected = append(expected, want[k]...)
				}
				var got []string
				var last *cairn.PendingInterrupt
				page := cairn.Page{Limit: c.limit, Kinds: kinds}
				for pages := 0; ; pages++ {
					if pages > 100 {
						t.Fatalf("%v: more than 100 pages", kinds)
					}
					items, next, err := r.InterruptsPage(ctx, page)
					if err != nil {
						t.Fatal(err)
					}
					if len(items) > c.limit {
						t.Fatalf("%v: %d items on a page of %d", kinds, len(items), c.limit)
					}
					for _, it := range items {
						if !slices.Contains(kinds, it.Kind) {
							t.Errorf("%v: an interrupt of kind %s", kinds, it.Kind)
						}
						if last != nil && it.PausedAt.After(last.PausedAt) {
							t.Errorf("%v: %s (paused %v) after %s (paused %v): not newest first", kinds, it.SessionID, it.PausedAt, last.SessionID, last.PausedAt)
						}
						if mine[it.SessionID] {
							got = append(got, it.SessionID+" "+string(it.Kind))
						}
						last = &it
					}
					if next == "" {
						break
					}
					page.Cursor = next
				}
				slices.Sort(got)
				slices.Sort(expected)
				if !slices.Equal(got, expected) {
					t.Errorf("%v, pages of %d: listed\n%s\nwant\n%s", kinds, c.limit, strings.Join(got, "\n"), strings.Join(expected, "\n"))
				}
			}
		})
	}
}
