package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// BenchmarkAnalytics answers GET /v1/analytics' question (Runner.Analytics,
// by tool, by approver, and over the last day) over the decision records of
// 100,000 decided sessions in a SQLite file: 8 tools, 5 approvers, a
// decision a minute, one in ten rejected. The records are written as
// decisions write them (store.Head.Decisions), 1,000 to a commit, so the
// setup takes seconds instead of the hours 100,000 turns would; the query
// reads the same rows either way.
func BenchmarkAnalytics(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "analytics.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	const sessions = 100_000
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for batch := 0; batch < sessions/1000; batch++ {
		h := store.Head{ID: fmt.Sprintf("batch-%d", batch), Agent: "ops", Status: session.StatusCompleted, Seq: 1, CreatedAt: start, UpdatedAt: start,
			Summary: json.RawMessage(`{}`)}
		for i := range 1000 {
			n := batch*1000 + i
			at := start.Add(time.Duration(n) * time.Minute)
			action := session.ActionApprove
			if n%10 == 0 {
				action = session.ActionReject
			}
			h.Decisions = append(h.Decisions, store.DecisionRecord{ID: fmt.Sprintf("ses_%d/int_1", n), SessionID: fmt.Sprintf("ses_%d", n), Agent: "ops",
				Tool: fmt.Sprintf("tool_%d", n%8), Shape: `args.env == "staging"`, Action: action, Approver: fmt.Sprintf(" p%d", n%5),
				Name: fmt.Sprintf("p%d", n%5), AskedAt: at.Add(-time.Duration(1+n%600) * time.Second), DecidedAt: at})
		}
		if err := st.Append(ctx, h, 0, []session.Event{{Seq: 1, Type: session.EventSessionStarted, Time: start, Data: json.RawMessage(`{}`)}}); err != nil {
			b.Fatal(err)
		}
	}
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: scripted.New(scripted.Reply{Text: "hi"})}}, &cairn.RunnerOptions{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	end := start.Add(sessions * time.Minute)
	for _, c := range []struct {
		name string
		q    cairn.AnalyticsQuery
		rows int
	}{
		{"all/by-tool", cairn.AnalyticsQuery{By: cairn.ByTool}, 8},
		{"all/by-approver", cairn.AnalyticsQuery{By: cairn.ByApprover}, 5},
		{"last-day/by-tool", cairn.AnalyticsQuery{By: cairn.ByTool, Since: end.Add(-24 * time.Hour)}, 8},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				a, err := r.Analytics(ctx, cairn.Actor{}, c.q)
				if err != nil || len(a.Rows) != c.rows {
					b.Fatalf("%v %+v", err, a)
				}
			}
		})
	}
}
