package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// SQLStore is a SQL store under the upgrade checks: its database can be
// reopened, and rewound behind the store's back to the schema of an older
// version, as a careless migration or an old file would leave it.
type SQLStore struct {
	// Open opens the store on the same database each time.
	Open func(t *testing.T) interface {
		store.Store
		Explainer
	}
	// Exec runs SQL on the database, outside the store.
	Exec func(t *testing.T, sql string)
	// DropOwner takes the owner column (and what indexes it) away.
	DropOwner string
	// DropTenant takes the tenant column (and what indexes it) away.
	DropTenant string
	// DropPendingKinds takes pending_kinds (its indexes and triggers) away.
	DropPendingKinds string
	// DropListingIndex drops the indexes of the unfiltered listing and of
	// the listings by status (in SQLite one: the unfiltered listing merges
	// a walk of the status index per status).
	DropListingIndex string
	// DropInputKindIndex drops the index of the inbox by kind input.
	DropInputKindIndex string
}

// RunUpgrades checks what a SQL store does on open with a database of an
// older version, and that the plan check notices a missing index:
//
//   - the owner column is added and filled in from each session's summary,
//     so listings by owner find the old sessions;
//   - the tenant column is added, and the sessions stored before it
//     belong to the default tenant ("");
//   - pending_kinds is added and filled in from the paused sessions'
//     summaries, so the inbox by kind finds them;
//   - with an index dropped, PlanProblems names the listings that then
//     scan or sort, first page and deep page both.
//
// fresh gives each check a database of its own.
func RunUpgrades(t *testing.T, fresh func(t *testing.T) SQLStore) {
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	t.Run("owner", func(t *testing.T) {
		db := fresh(t)
		s := db.Open(t)
		AppendPaused(t, s, at, map[string]string{"old1": `{"id":"old1","owner":"uma"}`, "old2": `{"id":"old2"}`})
		s.Close()
		db.Exec(t, db.DropOwner)
		s = db.Open(t)
		defer s.Close()
		got, err := s.List(ctx, store.ListOptions{Owner: "uma"})
		if err != nil || len(got) != 1 || got[0].ID != "old1" || got[0].Owner != "uma" {
			t.Fatalf("uma's sessions after the upgrade: %+v %v", got, err)
		}
	})
	t.Run("tenant", func(t *testing.T) {
		db := fresh(t)
		s := db.Open(t)
		paused := func(id, tenant string) {
			t.Helper()
			if err := s.Append(ctx, store.Head{ID: id, Agent: "main", Owner: "uma", Tenant: tenant, Status: session.StatusPaused, Seq: 1, CreatedAt: at, UpdatedAt: at,
				Summary: []byte(`{"id":"` + id + `","interrupts":[{"id":"i1","kind":"approval"}]}`), PendingKinds: store.KindBit(session.KindApproval)},
				0, []session.Event{{Seq: 1, Type: session.EventUserMessage, Time: at, Data: []byte(`{}`)}}); err != nil {
				t.Fatal(err)
			}
		}
		paused("old1", "")
		s.Close()
		db.Exec(t, db.DropTenant)
		s = db.Open(t)
		defer s.Close()
		paused("new1", "acme")
		for tenant, want := range map[string]string{"": "old1", "acme": "new1", "globex": ""} {
			for _, opts := range []store.ListOptions{{ByTenant: true, Tenant: tenant}, {Owner: "uma", ByTenant: true, Tenant: tenant}, {Status: session.StatusPaused, Kind: session.KindApproval, ByTenant: true, Tenant: tenant}} {
				got, err := s.List(ctx, opts)
				var ids []string
				for _, h := range got {
					ids = append(ids, h.ID)
					if h.Tenant != tenant {
						t.Errorf("%+v: %s has tenant %q", opts, h.ID, h.Tenant)
					}
				}
				if err != nil || strings.Join(ids, ",") != want {
					t.Errorf("listing %+v after the upgrade: %v %v, want %q", opts, ids, err, want)
				}
			}
		}
	})
	t.Run("pending kinds", func(t *testing.T) {
		db := fresh(t)
		s := db.Open(t)
		AppendPaused(t, s, at, map[string]string{
			"asks":  `{"id":"asks","interrupts":[{"id":"i1","kind":"approval"},{"id":"i2","kind":"input"}]}`,
			"waits": `{"id":"waits","interrupts":[{"id":"i1","kind":"external"}]}`,
			"none":  `{"id":"none","interrupts":[]}`,
		})
		s.Close()
		db.Exec(t, db.DropPendingKinds)
		s = db.Open(t)
		defer s.Close()
		CheckKinds(t, s, map[session.Kind]string{session.KindApproval: "asks", session.KindInput: "asks", session.KindExternal: "waits", session.KindClient: ""})

		db.Exec(t, db.DropInputKindIndex)
		problems := planErrors(ctx, s)
		if all := strings.Join(problems, "\n"); len(problems) != 2 || !strings.Contains(all, "the inbox by kind input, first page") || !strings.Contains(all, "the inbox by kind input, after a cursor") {
			t.Fatalf("with the index of the inbox by kind input dropped, the check says:\n%s", all)
		}
	})
	t.Run("missing listing index", func(t *testing.T) {
		db := fresh(t)
		s := db.Open(t)
		defer s.Close()
		if errs := PlanProblems(ctx, s); len(errs) != 0 {
			t.Fatalf("with every index: %v", errs)
		}
		db.Exec(t, db.DropListingIndex)
		problems := planErrors(ctx, s)
		all := strings.Join(problems, "\n")
		for _, listing := range []string{"sessions", "sessions by status", "the inbox"} {
			for _, page := range []string{"first page", "after a cursor"} {
				if !strings.Contains(all, listing+", "+page+": the plan") {
					t.Errorf("with the listing indexes dropped, the check misses %s, %s", listing, page)
				}
			}
		}
		if len(problems) != 6 {
			t.Fatalf("with the listing indexes dropped, the check says:\n%s", all)
		}
	})
}

func planErrors(ctx context.Context, e Explainer) []string {
	var out []string
	for _, err := range PlanProblems(ctx, e) {
		out = append(out, err.Error())
	}
	return out
}
