package local

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// Analytics is cairn.Runner.Analytics (documented there).
func (r *Runner) Analytics(ctx context.Context, actor session.Actor, q session.AnalyticsQuery) (*session.Analytics, error) {
	ds, ok := r.store.(store.Decisions)
	if !ok {
		return nil, &session.Error{Code: session.CodeInvalidRequest, Message: "this runner's store keeps no decision records"}
	}
	if err := approverOnly(actor, "approval analytics are"); err != nil {
		return nil, err
	}
	by := cmp.Or(q.By, session.ByTool)
	if !by.Valid() {
		return nil, &session.Error{Code: session.CodeInvalidRequest, Message: fmt.Sprintf("by: %q is not tool, agent or approver", q.By)}
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return nil, &session.Error{Code: session.CodeInvalidRequest, Message: "since must be before until"}
	}
	readTime := cmp.Or(q.ReadTime, session.DefaultReadTime)
	rows := map[string]*tally{}
	row := func(key string) *tally {
		t := rows[key]
		if t == nil {
			t = &tally{row: session.AnalyticsRow{Key: key}}
			rows[key] = t
		}
		return t
	}
	err := ds.Decisions(ctx, store.DecisionQuery{Tenant: actor.Tenant, AllTenants: actor.EveryTenant(), Since: q.Since, Until: q.Until, Lean: true}, func(d *store.DecisionRecord) bool {
		var key string
		switch by {
		case session.ByAgent:
			key = d.Agent
		case session.ByApprover:
			if d.Rule != "" || d.Expired {
				return true // no person decided it
			}
			key = d.Name
		case session.ByTool:
			key = d.Tool
		}
		row(key).add(d, readTime)
		return true
	})
	if err != nil {
		return nil, err
	}
	if by != session.ByApprover {
		if err := r.countPending(ctx, actor, by, row); err != nil {
			return nil, err
		}
	}
	out := &session.Analytics{By: by, Since: q.Since, Until: q.Until, ReadTimeMs: readTime.Milliseconds(), Rows: make([]session.AnalyticsRow, 0, len(rows))}
	for _, t := range rows {
		out.Rows = append(out.Rows, t.done())
	}
	slices.SortFunc(out.Rows, func(a, b session.AnalyticsRow) int { return cmp.Compare(a.Key, b.Key) })
	return out, nil
}

// tally is one row while the decisions are read.
type tally struct {
	row    session.AnalyticsRow
	waits  []time.Duration // people's times to decision
	streak int             // the people's approvals since the last rejection or edit
}

func (t *tally) add(d *store.DecisionRecord, readTime time.Duration) {
	r := &t.row
	r.Decisions++
	switch {
	case d.Expired:
		r.Expired++
	case d.Action == session.ActionApprove:
		r.Approved++
	case d.Action == session.ActionReject:
		r.Rejected++
	}
	if d.Edited {
		r.Edited++
	}
	if d.Rule != "" && !d.Expired {
		r.ByRule++
		return
	}
	if d.Expired {
		return
	}
	// A person decided.
	var waited time.Duration
	if !d.AskedAt.IsZero() {
		waited = max(d.DecidedAt.Sub(d.AskedAt), 0)
		t.waits = append(t.waits, waited)
	}
	if d.Action == session.ActionApprove && !d.Edited {
		t.streak++
		r.LongestStreak = max(r.LongestStreak, t.streak)
		if !d.AskedAt.IsZero() && waited < readTime {
			r.FastApprovals++
		}
	} else {
		t.streak = 0
	}
}

func (t *tally) done() session.AnalyticsRow {
	slices.Sort(t.waits)
	t.row.TimeToDecision = session.Quantiles{P50: quantileMs(t.waits, 0.5), P90: quantileMs(t.waits, 0.9)}
	return t.row
}

// quantileMs is the q-quantile of sorted durations in milliseconds, by
// the nearest rank (the smallest value with at least q of them at or
// below it); 0 for none.
func quantileMs(sorted []time.Duration, q float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(q*float64(len(sorted)) + 0.999999999)
	return sorted[min(max(rank, 1), len(sorted))-1].Milliseconds()
}

// countPending adds the approvals waiting now to the rows, by tool or
// agent: a walk of the paused sessions with an approval pending (an
// index walk by kind), reading their summaries.
func (r *Runner) countPending(ctx context.Context, actor session.Actor, by session.AnalyticsBy, row func(string) *tally) error {
	opts := store.ListOptions{Status: session.StatusPaused, Kind: session.KindApproval, ByTenant: !actor.EveryTenant(), Tenant: actor.Tenant, Limit: 1000}
	for {
		heads, err := r.store.List(ctx, opts)
		if err != nil {
			return err
		}
		for _, h := range heads {
			s, err := r.sessionFromHead(h)
			if err != nil {
				return err
			}
			for _, in := range s.Interrupts {
				if in.Kind != session.KindApproval {
					continue
				}
				key := in.Tool
				if by == session.ByAgent && len(in.Path) > 0 {
					key = in.Path[len(in.Path)-1].Agent
				}
				row(key).row.Pending++
			}
		}
		if len(heads) < opts.Limit {
			return nil
		}
		opts.After = heads[len(heads)-1].Position()
	}
}
