package storetest

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// Explainer is a store that shows how its database runs a listing: the
// query plan, as the database prints it (SQLite's EXPLAIN QUERY PLAN,
// PostgreSQL's EXPLAIN). Run checks with it that every listing walks an
// index at any depth.
type Explainer interface {
	// ExplainList is the plan of List(opts).
	ExplainList(ctx context.Context, opts store.ListOptions) (string, error)
	// ExplainEvents is the plan of Events(id, after).
	ExplainEvents(ctx context.Context, id string, after int64) (string, error)
}

// planListings are the listings the HTTP API and the page serve: the
// first page and a page after a cursor of each, as the runtime asks for
// them (a page and one more, to know whether another follows).
func planListings() map[string]store.ListOptions {
	after := store.Position{UpdatedAt: epoch().Add(time.Hour), ID: "ses_x"}
	out := map[string]store.ListOptions{}
	listings := map[string]store.ListOptions{}
	for name, o := range map[string]store.ListOptions{
		"sessions":           {},
		"sessions by status": {Status: "completed"},
		"sessions by agent":  {Agent: "main"},
		"the inbox":          {Status: "paused"},
	} {
		listings[name] = o
		// A person's listings are of their tenant (the default one is "").
		o.ByTenant, o.Tenant = true, "acme"
		listings[name+" in a tenant"] = o
	}
	// A listing by owner is always within the owner's tenant.
	listings["sessions by owner"] = store.ListOptions{Owner: "uma", ByTenant: true}
	for _, k := range store.IndexedKinds() {
		listings["the inbox by kind "+string(k)] = store.ListOptions{Status: "paused", Kind: k}
		listings["the inbox by kind "+string(k)+" in a tenant"] = store.ListOptions{Status: "paused", Kind: k, ByTenant: true, Tenant: "acme"}
	}
	for name, o := range listings {
		o.Limit = 101
		out[name+", first page"] = o
		o.After = after
		out[name+", after a cursor"] = o
	}
	return out
}

// PlanProblems explains each listing of e and returns one error for each
// plan that scans a table or sorts: a listing that would cost more the
// more sessions there are, or the deeper its page.
func PlanProblems(ctx context.Context, e Explainer) []error {
	var out []error
	check := func(name, plan string, err error) {
		if err != nil {
			out = append(out, fmt.Errorf("%s: %w", name, err))
			return
		}
		if why := badPlan(plan); why != "" {
			out = append(out, fmt.Errorf("%s: the plan %s:\n%s", name, why, plan))
		}
	}
	for name, opts := range planListings() {
		plan, err := e.ExplainList(ctx, opts)
		check(name, plan, err)
	}
	for _, after := range []int64{0, 500} {
		plan, err := e.ExplainEvents(ctx, "ses_x", after)
		check(fmt.Sprintf("a session's events after %d", after), plan, err)
	}
	return out
}

var (
	// SQLite: "SCAN t" reads the whole table ("SCAN t USING INDEX i" walks
	// an index in order, which a LIMIT stops); a temp B-tree sorts.
	sqliteScan = regexp.MustCompile(`(?m)^\s*SCAN \S+\s*$`)
	sqliteSort = regexp.MustCompile(`USE TEMP B-TREE`)
	// PostgreSQL: a sequential scan reads the whole table; a Sort node
	// sorts; a Filter drops rows an index walk read, so it reads as many
	// as it takes to fill the page (a rare kind: all of them).
	pgScan   = regexp.MustCompile(`Seq Scan`)
	pgSort   = regexp.MustCompile(`(?m)^\s*(->\s*)?(Incremental )?Sort\b`)
	pgFilter = regexp.MustCompile(`(?m)^\s*Filter:`)
)

// badPlan says what is wrong with a plan, or "".
func badPlan(plan string) string {
	switch {
	case sqliteScan.MatchString(plan), pgScan.MatchString(plan):
		return "scans a table"
	case sqliteSort.MatchString(plan), pgSort.MatchString(plan):
		return "sorts"
	case pgFilter.MatchString(plan):
		return "filters the rows an index walk reads"
	}
	return ""
}

func testListingsWalkIndexes(t *testing.T, open func(t *testing.T) store.Store) {
	e, ok := open(t).(Explainer)
	if !ok {
		t.Skip("the store does not explain its queries (storetest.Explainer)")
	}
	for _, err := range PlanProblems(context.Background(), e) {
		t.Error(err)
	}
}
