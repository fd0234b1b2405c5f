// Package storetest is the conformance suite every store.Store backend must pass.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// Run runs the suite against stores made by open; each subtest gets a fresh one.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("AppendAndRead", func(t *testing.T) { testAppendAndRead(t, open) })
	t.Run("StaleSeqConflictsAndWritesNothing", func(t *testing.T) { testStaleSeqConflictsAndWritesNothing(t, open) })
	t.Run("ConcurrentAppendsOneWinner", func(t *testing.T) { testConcurrentAppendsOneWinner(t, open) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, open) })
	t.Run("NilSummaryKeepsThePrevious", func(t *testing.T) { testNilSummaryKeepsThePrevious(t, open) })
	t.Run("QuietAppendKeepsTheListing", func(t *testing.T) { testQuietAppendKeepsTheListing(t, open) })
	t.Run("Snapshots", func(t *testing.T) { testSnapshots(t, open) })
	t.Run("SecretFirstWriterWins", func(t *testing.T) { testSecretFirstWriterWins(t, open) })
	t.Run("LedgerSpendsOnce", func(t *testing.T) { testLedgerSpendsOnce(t, open) })
	t.Run("ListExpiredAndPaged", func(t *testing.T) { testListExpiredAndPaged(t, open) })
	t.Run("ListByStatus", func(t *testing.T) { testListByStatus(t, open) })
	t.Run("ListEveryStatusInOrder", func(t *testing.T) { testListEveryStatusInOrder(t, open) })
	t.Run("ListByKind", func(t *testing.T) { testListByKind(t, open) })
	t.Run("ListingsWalkIndexes", func(t *testing.T) { testListingsWalkIndexes(t, open) })
	t.Run("Purge", func(t *testing.T) { testPurge(t, open) })
	t.Run("PurgeLeavesTombstones", func(t *testing.T) { testPurgeLeavesTombstones(t, open) })
	t.Run("CheckpointsKeepTheLast", func(t *testing.T) { testCheckpointsKeepTheLast(t, open) })
	t.Run("OutboxCommitsWithTheEvents", func(t *testing.T) { testOutboxCommitsWithTheEvents(t, open) })
	t.Run("OutboxClaimsRetriesAndGivesUp", func(t *testing.T) { testOutboxClaimsRetriesAndGivesUp(t, open) })
	t.Run("BlobsKeepTheFirstValue", func(t *testing.T) { testBlobsKeepTheFirstValue(t, open) })
	t.Run("SnapshotBlobsCommitWithTheHead", func(t *testing.T) { testSnapshotBlobsCommitWithTheHead(t, open) })
	t.Run("RulesCommitWithTheDecision", func(t *testing.T) { testRulesCommitWithTheDecision(t, open) })
	t.Run("DecisionsCommitWithTheirEvents", func(t *testing.T) { testDecisionsCommitWithTheirEvents(t, open) })
}

func testAppendAndRead(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	t0 := epoch()
	s := open(t)
	if err := s.Append(ctx, headAt("s1", 2, "running"), 0, []session.Event{event(1), event(2)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, headAt("s1", 3, "paused"), 2, []session.Event{event(3)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Events(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Seq != 1 || got[2].Seq != 3 || string(got[2].Data) != `{"text":"m3"}` || !got[1].Time.Equal(event(2).Time) || got[0].Frame != "f1" || got[0].Agent != "main" {
		t.Fatalf("events = %+v", got)
	}
	after, _ := s.Events(ctx, "s1", 2)
	if len(after) != 1 || after[0].Seq != 3 {
		t.Fatalf("events after 2 = %+v", after)
	}
	h, err := s.Head(ctx, "s1")
	if err != nil || h.Seq != 3 || h.Status != "paused" || string(h.Summary) != `{"seq":3}` || !h.CreatedAt.Equal(t0) {
		t.Fatalf("head = %+v, %v", h, err)
	}
}

func testStaleSeqConflictsAndWritesNothing(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	must(t, s.Append(ctx, headAt("s1", 1, "running"), 0, []session.Event{event(1)}))
	must(t, s.Append(ctx, headAt("s1", 2, "paused"), 1, []session.Event{event(2)}))
	err := s.Append(ctx, headAt("s1", 2, "completed"), 1, []session.Event{event(2)})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale append: err = %v, want ErrConflict", err)
	}
	if err := s.Append(ctx, headAt("s1", 1, "running"), 0, []session.Event{event(1)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("re-create: err = %v, want ErrConflict", err)
	}
	h, _ := s.Head(ctx, "s1")
	got, _ := s.Events(ctx, "s1", 0)
	if h.Status != "paused" || h.Seq != 2 || len(got) != 2 {
		t.Fatalf("after conflicts: head %+v, %d events", h, len(got))
	}
}

func testConcurrentAppendsOneWinner(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	must(t, s.Append(ctx, headAt("s1", 1, "paused"), 0, []session.Event{event(1)}))
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, conflicts := 0, 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Append(ctx, headAt("s1", 2, "running"), 1, []session.Event{event(2)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, store.ErrConflict):
				conflicts++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || conflicts != 7 {
		t.Fatalf("wins %d conflicts %d, want 1 and 7", wins, conflicts)
	}
}

func testNotFound(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	if _, err := s.Head(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Head: %v", err)
	}
	if _, err := s.Events(ctx, "nope", 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Events: %v", err)
	}
	if err := s.Append(ctx, headAt("nope", 2, "x"), 1, []session.Event{event(2)}); !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Append to unknown: %v", err)
	}
}

func testNilSummaryKeepsThePrevious(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	must(t, s.Append(ctx, headAt("s1", 1, "running"), 0, []session.Event{event(1)}))
	h := headAt("s1", 2, "paused")
	h.Summary = nil
	must(t, s.Append(ctx, h, 1, []session.Event{event(2)}))
	got, err := s.Head(ctx, "s1")
	if err != nil || string(got.Summary) != `{"seq":1}` || got.Seq != 2 || got.Status != "paused" {
		t.Fatalf("head = %+v %s, %v", got, got.Summary, err)
	}
}

// A quiet append (a running turn's tool step) moves the seq and the
// lease, and leaves what listings read: the status, the summary, the
// update time that orders them. The session keeps its place in a listing
// behind one updated since; its next loud append moves it again.
func testQuietAppendKeepsTheListing(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	first := runningHead("quiet", 1, "n1", epoch().Add(time.Second), time.Minute)
	must(t, s.Append(ctx, first, 0, []session.Event{event(1)}))
	must(t, s.Append(ctx, headAt("other", 1, "running"), 0, []session.Event{event(1)})) // updated at epoch + 1 s too: "quiet" > "other"
	later := epoch().Add(5 * time.Second)
	other := headAt("other", 2, "running")
	other.UpdatedAt = epoch().Add(3 * time.Second)
	must(t, s.Append(ctx, other, 1, []session.Event{event(2)}))

	q := runningHead("quiet", 2, "n1", later, 2*time.Minute)
	q.Summary, q.Quiet = nil, true
	must(t, s.Append(ctx, q, 1, []session.Event{event(2)}))
	got, err := s.Head(ctx, "quiet")
	if err != nil || got.Seq != 2 || got.Status != "running" || !got.UpdatedAt.Equal(first.UpdatedAt) || string(got.Summary) != `{}` ||
		!got.Lease.Until.Equal(later.Add(2*time.Minute)) || got.Quiet {
		t.Fatalf("after a quiet append: %+v, %v", got, err)
	}
	if evs, err := s.Events(ctx, "quiet", 0); err != nil || len(evs) != 2 {
		t.Fatalf("events = %d, %v", len(evs), err)
	}
	order := func() string {
		t.Helper()
		hs, err := s.List(ctx, store.ListOptions{})
		must(t, err)
		var ids []string
		for _, h := range hs {
			ids = append(ids, h.ID)
		}
		return strings.Join(ids, " ")
	}
	if got := order(); got != "other quiet" {
		t.Fatalf("listing after the quiet append: %s, want other first (updated later)", got)
	}
	done := headAt("quiet", 3, "completed")
	done.UpdatedAt = later.Add(time.Second)
	done.Lease = store.Lease{Owner: "n1", Until: done.UpdatedAt} // released
	must(t, s.Append(ctx, done, 2, []session.Event{event(3)}))
	if got := order(); got != "quiet other" {
		t.Fatalf("listing after the loud append: %s, want quiet first", got)
	}
}

func testSnapshots(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	must(t, s.Append(ctx, headAt("s1", 1, "running"), 0, []session.Event{event(1)}))
	if _, _, err := s.LatestSnapshot(ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no snapshot yet: %v", err)
	}
	h := headAt("s1", 2, "running")
	h.Snapshot = []byte(`{"at":2}`)
	must(t, s.Append(ctx, h, 1, []session.Event{event(2)}))
	must(t, s.Append(ctx, headAt("s1", 3, "paused"), 2, []session.Event{event(3)}))
	seq, data, err := s.LatestSnapshot(ctx, "s1")
	if err != nil || seq != 2 || string(data) != `{"at":2}` {
		t.Fatalf("snapshot = %d %q %v", seq, data, err)
	}
	if got, _ := s.Head(ctx, "s1"); got.Snapshot != nil {
		t.Fatal("Head returned the snapshot")
	}
	// A conflicting append writes no snapshot either.
	h = headAt("s1", 3, "x")
	h.Snapshot = []byte(`{"at":"stale"}`)
	if err := s.Append(ctx, h, 2, []session.Event{event(3)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale append: %v", err)
	}
	if _, data, _ := s.LatestSnapshot(ctx, "s1"); string(data) != `{"at":2}` {
		t.Fatalf("a refused append replaced the snapshot: %s", data)
	}
}

func testSecretFirstWriterWins(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s, ok := open(t).(store.Secrets)
	if !ok {
		t.Skip("the store does not implement store.Secrets")
	}
	a, err := s.Secret(ctx, "hmac", []byte("first"))
	if err != nil || string(a) != "first" {
		t.Fatalf("first: %q %v", a, err)
	}
	b, err := s.Secret(ctx, "hmac", []byte("second"))
	if err != nil || string(b) != "first" {
		t.Fatalf("second: %q %v", b, err)
	}
}

func testLedgerSpendsOnce(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	l, ok := open(t).(store.Ledger)
	if !ok {
		t.Skip("the store does not implement store.Ledger")
	}
	if _, err := l.Outcome(ctx, "tok_1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("outcome of an unused token: %v, want ErrNotFound", err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := l.MarkUsed(ctx, "tok_1")
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins++
			} else if !errors.Is(err, store.ErrConflict) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("wins = %d, want 1", wins)
	}
	if out, err := l.Outcome(ctx, "tok_1"); err != nil || out != nil {
		t.Fatalf("outcome while being spent = %q, %v; want nil, nil", out, err)
	}
	must(t, l.SetOutcome(ctx, "tok_1", []byte(`{"status":"paused"}`)))
	if out, err := l.Outcome(ctx, "tok_1"); err != nil || string(out) != `{"status":"paused"}` {
		t.Fatalf("outcome = %q, %v", out, err)
	}
	if err := l.MarkUsed(ctx, "tok_1"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("spending a settled token again: %v, want ErrConflict", err)
	}
	if err := l.SetOutcome(ctx, "tok_never", []byte("x")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("outcome of an unused token: %v, want ErrNotFound", err)
	}
	must(t, l.MarkUsed(ctx, "tok_2"))
}

func testListExpiredAndPaged(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	t0 := epoch()
	s := open(t)
	// Six paused sessions, updated a second apart; b and d have approvals
	// due at t0+1h and t0+2h.
	for i, id := range []string{"a", "b", "c", "d", "e", "f"} {
		h := store.Head{ID: id, Agent: "main", Status: "paused", Seq: 1, CreatedAt: t0, UpdatedAt: t0.Add(time.Duration(i) * time.Second), Summary: json.RawMessage(`{}`)}
		switch id {
		case "b":
			h.NextExpiry = t0.Add(time.Hour)
		case "d":
			h.NextExpiry = t0.Add(2 * time.Hour)
		}
		must(t, s.Append(ctx, h, 0, []session.Event{{Seq: 1, Type: "user_message", Time: t0, Frame: "f1", Agent: "main", Data: json.RawMessage(`{}`)}}))
	}
	ids := func(hs []store.Head) string {
		var out []string
		for _, h := range hs {
			out = append(out, h.ID)
		}
		return strings.Join(out, ",")
	}
	due, err := s.List(ctx, store.ListOptions{ExpiredAt: t0.Add(90 * time.Minute)})
	if err != nil || ids(due) != "b" || !due[0].NextExpiry.Equal(t0.Add(time.Hour)) {
		t.Fatalf("due at +90m: %s %v", ids(due), err)
	}
	if due, _ := s.List(ctx, store.ListOptions{ExpiredAt: t0.Add(3 * time.Hour)}); ids(due) != "d,b" {
		t.Fatalf("due at +3h: %s", ids(due))
	}
	// A decided session is no longer due.
	h, _ := s.Head(ctx, "b")
	h.Seq, h.Status, h.NextExpiry, h.UpdatedAt = 2, "completed", time.Time{}, t0.Add(time.Minute)
	must(t, s.Append(ctx, h, 1, []session.Event{{Seq: 2, Type: "turn_completed", Time: t0, Frame: "f1", Agent: "main", Data: json.RawMessage(`{}`)}}))
	if due, _ := s.List(ctx, store.ListOptions{ExpiredAt: t0.Add(3 * time.Hour)}); ids(due) != "d" {
		t.Fatalf("due after b was decided: %s", ids(due))
	}
	// Pages of two, in List's order, none twice, none missed.
	var pages []string
	var after store.Position
	for {
		page, err := s.List(ctx, store.ListOptions{Limit: 2, After: after})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		pages = append(pages, ids(page))
		after = page[len(page)-1].Position()
	}
	if got := strings.Join(pages, "|"); got != "b,f|e,d|c,a" {
		t.Fatalf("pages %s, want b,f|e,d|c,a", got)
	}
}

// The listings without a status (every session, the default tenant's)
// have every status in one order, paged at any size without a session
// twice or missed — the SQL stores merge a walk per status; ties of
// updated_at are ordered by id.
func testListEveryStatusInOrder(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	t0 := epoch()
	s := open(t)
	statuses := session.AllStatuses()
	var want []store.Position
	for i := range 23 {
		id := fmt.Sprintf("s%02d", i)
		// Three share each second, so ties cross statuses.
		h := store.Head{ID: id, Agent: "main", Status: statuses[(i*7)%len(statuses)], Seq: 1, CreatedAt: t0, UpdatedAt: t0.Add(time.Duration(i/3) * time.Second), Summary: json.RawMessage(`{}`)}
		if i%4 == 0 {
			h.Tenant = "acme"
		}
		must(t, s.Append(ctx, h, 0, []session.Event{{Seq: 1, Type: "user_message", Time: t0, Frame: "f1", Agent: "main", Data: json.RawMessage(`{}`)}}))
		if h.Tenant == "" {
			want = append(want, h.Position())
		}
	}
	slices.SortFunc(want, store.Position.Compare)
	for _, size := range []int{0, 1, 4, 7, 100} {
		var got []store.Position
		var after store.Position
		for {
			page, err := s.List(ctx, store.ListOptions{ByTenant: true, Limit: size, After: after})
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range page {
				got = append(got, h.Position())
			}
			if len(page) == 0 || size == 0 {
				break
			}
			after = page[len(page)-1].Position()
		}
		if !slices.Equal(got, want) {
			t.Fatalf("pages of %d: %v\nwant %v", size, got, want)
		}
	}
	if all, err := s.List(ctx, store.ListOptions{}); err != nil || len(all) != 23 {
		t.Fatalf("every session: %d, %v", len(all), err)
	}
}

func testListByStatus(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	must(t, s.Append(ctx, headAt("a", 1, "paused"), 0, []session.Event{event(1)}))
	must(t, s.Append(ctx, headAt("b", 2, "completed"), 0, []session.Event{event(1), event(2)}))
	must(t, s.Append(ctx, headAt("c", 3, "paused"), 0, []session.Event{event(1), event(2), event(3)}))
	paused, err := s.List(ctx, store.ListOptions{Status: "paused"})
	if err != nil {
		t.Fatal(err)
	}
	if len(paused) != 2 || paused[0].ID != "c" || paused[1].ID != "a" {
		t.Fatalf("paused = %+v", paused)
	}
	all, _ := s.List(ctx, store.ListOptions{})
	if len(all) != 3 {
		t.Fatalf("all = %d", len(all))
	}
	// By agent, owner and tenant: a session keeps the owner and the
	// tenant it was stored with.
	d := headAt("d", 4, "paused")
	d.Agent, d.Owner, d.Tenant = "billing", "uma", "acme"
	must(t, s.Append(ctx, d, 0, []session.Event{event(1), event(2), event(3), event(4)}))
	d.Seq, d.Status, d.UpdatedAt, d.Owner, d.Tenant = 5, "completed", d.UpdatedAt.Add(time.Second), "", "globex"
	must(t, s.Append(ctx, d, 4, []session.Event{event(5)}))
	for _, c := range []struct {
		opts store.ListOptions
		want string
	}{
		{store.ListOptions{Agent: "billing"}, "d"},
		{store.ListOptions{Agent: "main"}, "c,b,a"},
		{store.ListOptions{Owner: "uma"}, "d"},
		{store.ListOptions{Owner: "uma", Status: "paused"}, ""},
		{store.ListOptions{Owner: "bob"}, ""},
		{store.ListOptions{ByTenant: true, Tenant: "acme"}, "d"},
		{store.ListOptions{ByTenant: true, Tenant: "globex"}, ""},
		{store.ListOptions{ByTenant: true}, "c,b,a"},
		{store.ListOptions{ByTenant: true, Status: "paused"}, "c,a"},
		{store.ListOptions{ByTenant: true, Tenant: "acme", Agent: "billing"}, "d"},
		{store.ListOptions{ByTenant: true, Agent: "billing"}, ""},
		{store.ListOptions{ByTenant: true, Tenant: "acme", Owner: "uma"}, "d"},
		{store.ListOptions{ByTenant: true, Owner: "uma"}, ""},
	} {
		got, err := s.List(ctx, c.opts)
		var ids []string
		for _, h := range got {
			ids = append(ids, h.ID)
			if h.ID == "d" && (h.Owner != "uma" || h.Tenant != "acme") {
				t.Errorf("d's owner, tenant = %q, %q", h.Owner, h.Tenant)
			}
		}
		if err != nil || strings.Join(ids, ",") != c.want {
			t.Errorf("List(%+v) = %v, %v; want %s", c.opts, ids, err, c.want)
		}
	}
}

// A paused session is listed under each kind of its pending interrupts
// (its summary's, which Head.PendingKinds repeats), which a nil Summary
// keeps and a new summary replaces; one that runs or
// ended is listed under none; a kind no store knows is an error.
func testListByKind(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	put := func(id string, at time.Duration, status session.Status, kinds ...session.Kind) store.Head {
		t.Helper()
		h := headAt(id, 1, status)
		h.UpdatedAt = epoch().Add(at * time.Second)
		var interrupts []session.Interrupt
		for i, k := range kinds {
			interrupts = append(interrupts, session.Interrupt{ID: fmt.Sprint(i), Kind: k})
		}
		h.Summary, _ = json.Marshal(session.Session{ID: id, Status: status, Interrupts: interrupts})
		h.PendingKinds = store.KindsOf(interrupts)
		must(t, s.Append(ctx, h, 0, []session.Event{event(1)}))
		return h
	}
	put("a", 1, "paused", session.KindApproval)
	b := put("b", 2, "paused", session.KindApproval, session.KindInput)
	put("c", 3, "paused", session.KindExternal)
	d := put("d", 4, "paused", session.KindInput)
	put("e", 5, "completed", session.KindApproval) // kinds of a summary that is not paused: not listed
	// b: another append without a summary keeps its kinds.
	b.Seq, b.UpdatedAt, b.Summary = 2, b.UpdatedAt.Add(10*time.Second), nil
	must(t, s.Append(ctx, b, 1, []session.Event{event(2)}))
	// d: answered, it runs: no longer in the inbox.
	d.Seq, d.Status, d.UpdatedAt, d.PendingKinds = 2, "running", d.UpdatedAt.Add(time.Second), 0
	d.Summary = json.RawMessage(`{"id":"d","status":"running","interrupts":[]}`)
	must(t, s.Append(ctx, d, 1, []session.Event{event(2)}))
	list := func(opts store.ListOptions) string {
		t.Helper()
		got, err := s.List(ctx, opts)
		if err != nil {
			t.Fatalf("List(%+v): %v", opts, err)
		}
		var ids []string
		for _, h := range got {
			ids = append(ids, h.ID)
		}
		return strings.Join(ids, ",")
	}
	for _, c := range []struct {
		opts store.ListOptions
		want string
	}{
		{store.ListOptions{Kind: session.KindApproval}, "b,a"},
		{store.ListOptions{Kind: session.KindApproval, Status: "paused", Limit: 1}, "b"},
		{store.ListOptions{Kind: session.KindApproval, After: store.Position{UpdatedAt: b.UpdatedAt, ID: "b"}}, "a"},
		{store.ListOptions{Kind: session.KindInput}, "b"},
		{store.ListOptions{Kind: session.KindExternal}, "c"},
		{store.ListOptions{Kind: session.KindClient}, ""},
	} {
		if got := list(c.opts); got != c.want {
			t.Errorf("List(%+v) = %q; want %q", c.opts, got, c.want)
		}
	}
	heads, err := s.List(ctx, store.ListOptions{Kind: session.KindApproval, Limit: 1})
	if err != nil || len(heads) != 1 || !heads[0].PendingKinds.Has(session.KindInput) || heads[0].PendingKinds.Has(session.KindExternal) {
		t.Errorf("b's pending kinds as read: %+v, %v", heads, err)
	}
	if _, err := s.List(ctx, store.ListOptions{Kind: "approvals"}); err == nil {
		t.Error("List by an unknown kind: no error")
	}
}

// RunShared runs the tests of several processes sharing one store: open
// returns two handles on the same data (for a database, two connections
// pools, as two processes would have). Leases hold across handles, and
// each handle's Watch sees the other's commits and cancel requests.
func RunShared(t *testing.T, open func(t *testing.T) (a, b store.Store)) {
	t.Run("TokenSpentOnceAcrossProcesses", func(t *testing.T) { testTokenSpentOnceAcrossProcesses(t, open) })
	t.Run("LeaseKeepsOthersOut", func(t *testing.T) { testLeaseKeepsOthersOut(t, open) })
	t.Run("CancelRequestReachesTheOwner", func(t *testing.T) { testCancelRequestReachesTheOwner(t, open) })
	t.Run("WatchSeesTheOtherProcess", func(t *testing.T) { testWatchSeesTheOtherProcess(t, open) })
	t.Run("OutboxMessageClaimedByOneProcess", func(t *testing.T) { testOutboxMessageClaimedByOneProcess(t, open) })
}

func testTokenSpentOnceAcrossProcesses(t *testing.T, open func(t *testing.T) (a, b store.Store)) {
	ctx := context.Background()
	a, b := open(t)
	la, okA := a.(store.Ledger)
	lb, okB := b.(store.Ledger)
	if !okA || !okB {
		t.Skip("the store does not implement store.Ledger")
	}
	must(t, la.MarkUsed(ctx, "tok_shared"))
	if err := lb.MarkUsed(ctx, "tok_shared"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the other process spent the token again: %v", err)
	}
	must(t, la.SetOutcome(ctx, "tok_shared", []byte("done")))
	if out, err := lb.Outcome(ctx, "tok_shared"); err != nil || string(out) != "done" {
		t.Fatalf("outcome seen by the other process = %q, %v", out, err)
	}
}

func testLeaseKeepsOthersOut(t *testing.T, open func(t *testing.T) (a, b store.Store)) {
	ctx := context.Background()
	t0 := epoch()
	a, b := open(t)
	must(t, a.Append(ctx, runningHead("s", 1, "node-a", t0, 15*time.Second), 0, []session.Event{sharedEvent(1)}))
	h, err := b.Head(ctx, "s")
	if err != nil || h.Lease.Owner != "node-a" || !h.Lease.Until.Equal(t0.Add(15*time.Second)) {
		t.Fatalf("head %+v, %v", h.Lease, err)
	}
	// Another process, before the lease expires: refused, nothing written.
	if err := b.Append(ctx, runningHead("s", 2, "node-b", t0.Add(time.Second), 15*time.Second), 1, []session.Event{sharedEvent(2)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("append under another's lease: %v", err)
	}
	if got, _ := a.Events(ctx, "s", 0); len(got) != 1 {
		t.Fatalf("%d events after a refused append", len(got))
	}
	if expired, _ := b.List(ctx, store.ListOptions{LeaseExpiredAt: t0.Add(time.Second)}); len(expired) != 0 {
		t.Fatalf("a live lease listed as expired: %+v", expired)
	}
	// The owner renews; the other process cannot.
	if _, err := b.RenewLease(ctx, "s", store.Lease{Owner: "node-b", Until: t0.Add(time.Hour)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("renew by a non-owner: %v", err)
	}
	if cancel, err := a.RenewLease(ctx, "s", store.Lease{Owner: "node-a", Until: t0.Add(30 * time.Second)}); err != nil || cancel {
		t.Fatalf("renew by the owner: %v %v", cancel, err)
	}
	if err := b.Append(ctx, runningHead("s", 2, "node-b", t0.Add(20*time.Second), 15*time.Second), 1, []session.Event{sharedEvent(2)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("append before the renewed lease expired: %v", err)
	}
	// Expired: listed for takeover, and the takeover append wins.
	at := t0.Add(31 * time.Second)
	expired, err := b.List(ctx, store.ListOptions{LeaseExpiredAt: at})
	if err != nil || len(expired) != 1 || expired[0].ID != "s" {
		t.Fatalf("expired = %+v, %v", expired, err)
	}
	must(t, b.Append(ctx, runningHead("s", 2, "node-b", at, 15*time.Second), 1, []session.Event{sharedEvent(2)}))
	// The old owner lost it: renew and append both fail.
	if _, err := a.RenewLease(ctx, "s", store.Lease{Owner: "node-a", Until: at.Add(time.Minute)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("renew after takeover: %v", err)
	}
	if err := a.Append(ctx, runningHead("s", 2, "node-a", at, 15*time.Second), 1, []session.Event{sharedEvent(2)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("append after takeover: %v", err)
	}
	// Released (the turn paused): anyone appends.
	paused := runningHead("s", 3, "node-b", at, 0)
	paused.Status = "paused"
	must(t, b.Append(ctx, paused, 2, []session.Event{sharedEvent(3)}))
	if h, _ := a.Head(ctx, "s"); h.Lease.HeldBy("node-a", at) {
		t.Fatalf("released lease = %+v", h.Lease)
	}
	must(t, a.Append(ctx, runningHead("s", 4, "node-a", at, 15*time.Second), 3, []session.Event{sharedEvent(4)}))
}

func testCancelRequestReachesTheOwner(t *testing.T, open func(t *testing.T) (a, b store.Store)) {
	ctx := context.Background()
	t0 := epoch()
	a, b := open(t)
	must(t, a.Append(ctx, runningHead("s", 1, "node-a", t0, time.Minute), 0, []session.Event{sharedEvent(1)}))
	if err := b.RequestCancel(ctx, "nope", session.Actor{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cancel unknown: %v", err)
	}
	bob := session.Actor{Name: "bob", Role: "admin"}
	must(t, b.RequestCancel(ctx, "s", bob))
	if cancel, err := a.RenewLease(ctx, "s", store.Lease{Owner: "node-a", Until: t0.Add(time.Minute)}); err != nil || !cancel {
		t.Fatalf("renew after a cancel request: %v %v", cancel, err)
	}
	must(t, a.Append(ctx, runningHead("s", 2, "node-a", t0, time.Minute), 1, []session.Event{sharedEvent(2)}))
	if h, _ := a.Head(ctx, "s"); !h.CancelRequested || !reflect.DeepEqual(h.CancelBy, bob) {
		t.Fatalf("after a running step: cancel requested %v by %+v, want by %+v", h.CancelRequested, h.CancelBy, bob)
	}
	done := runningHead("s", 3, "node-a", t0, 0)
	done.Status = "cancelled"
	must(t, a.Append(ctx, done, 2, []session.Event{sharedEvent(3)}))
	if h, _ := b.Head(ctx, "s"); h.CancelRequested || !h.CancelBy.IsZero() {
		t.Fatalf("the request outlived the turn: %v by %+v", h.CancelRequested, h.CancelBy)
	}
	if err := b.RequestCancel(ctx, "s", bob); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("cancel of a session that is not running: %v", err)
	}
}

func testWatchSeesTheOtherProcess(t *testing.T, open func(t *testing.T) (a, b store.Store)) {
	ctx := context.Background()
	t0 := epoch()
	a, b := open(t)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	changes, err := a.Watch(wctx)
	if err != nil {
		t.Fatal(err)
	}
	must(t, b.Append(ctx, runningHead("w", 1, "node-b", t0, time.Minute), 0, []session.Event{sharedEvent(1)}))
	must(t, b.Append(ctx, runningHead("w", 3, "node-b", t0, time.Minute), 1, []session.Event{sharedEvent(2), sharedEvent(3)}))
	must(t, b.RequestCancel(ctx, "w", session.Actor{}))
	var seen []store.Change
	deadline := time.After(10 * time.Second)
	for len(seen) == 0 || seen[len(seen)-1].SessionID != "w" || !seen[len(seen)-1].CancelRequested {
		select {
		case c := <-changes:
			seen = append(seen, c)
		case <-deadline:
			t.Fatalf("changes seen: %+v", seen)
		}
	}
	last := int64(0)
	for _, c := range seen {
		if c.SessionID == "" {
			continue // resync
		}
		if c.SessionID != "w" || c.Seq < last {
			t.Fatalf("changes out of order: %+v", seen)
		}
		last = c.Seq
	}
	if last != 3 {
		t.Fatalf("last seq seen %d, want 3: %+v", last, seen)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// epoch is the time the suite's events start at.
func epoch() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) }

// event is event seq of a session's log, at epoch + seq ms.
func event(seq int64) session.Event {
	return session.Event{Seq: seq, Type: "user_message", Time: epoch().Add(time.Duration(seq) * time.Millisecond), Frame: "f1", Agent: "main", Data: json.RawMessage(fmt.Sprintf(`{"text":"m%d"}`, seq))}
}

// headAt is a head at seq, updated at epoch + seq s.
func headAt(id string, seq int64, status session.Status) store.Head {
	return store.Head{ID: id, Agent: "main", Status: status, Seq: seq, CreatedAt: epoch(), UpdatedAt: epoch().Add(time.Duration(seq) * time.Second), Summary: json.RawMessage(fmt.Sprintf(`{"seq":%d}`, seq))}
}

// sharedEvent is a minimal event at epoch.
func sharedEvent(seq int64) session.Event {
	return session.Event{Seq: seq, Type: "user_message", Time: epoch(), Frame: "f1", Agent: "main", Data: json.RawMessage(`{}`)}
}

// runningHead is a running session's head, leased by owner at at for lease.
func runningHead(id string, seq int64, owner string, at time.Time, lease time.Duration) store.Head {
	h := store.Head{ID: id, Agent: "main", Status: "running", Seq: seq, CreatedAt: epoch(), UpdatedAt: at, Summary: json.RawMessage(`{}`)}
	if owner != "" {
		h.Lease = store.Lease{Owner: owner, Until: at.Add(lease)}
	}
	return h
}

func outboxOf(t *testing.T, s store.Store) store.Outbox {
	t.Helper()
	o, ok := s.(store.Outbox)
	if !ok {
		t.Fatalf("%T does not implement store.Outbox", s)
	}
	return o
}

func message(id string) store.Message {
	return store.Message{ID: id, Topic: "hooks", Body: []byte(`{"type":"` + id + `"}`), CreatedAt: epoch()}
}

func ids(ms []store.Message) string {
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s#%d", m.ID, m.Attempts))
	}
	return strings.Join(out, " ")
}

// A message is in the outbox if and only if its commit is: a conflicting
// Append writes none, and an id written again keeps the first message.
func testOutboxCommitsWithTheEvents(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	o := outboxOf(t, s)
	h := headAt("s1", 1, "paused")
	h.Outbox = []store.Message{message("m1"), message("m2")}
	must(t, s.Append(ctx, h, 0, []session.Event{event(1)}))
	stale := headAt("s1", 2, "paused")
	stale.Outbox = []store.Message{message("lost")}
	if err := s.Append(ctx, stale, 0, []session.Event{event(1)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale append: %v", err)
	}
	again := headAt("s1", 2, "paused")
	again.Outbox = []store.Message{{ID: "m1", Topic: "hooks", Body: []byte(`second`), CreatedAt: epoch()}}
	must(t, s.Append(ctx, again, 1, []session.Event{event(2)}))
	got, err := o.ClaimMessages(ctx, "a", epoch(), epoch().Add(time.Minute), 10)
	must(t, err)
	if ids(got) != "m1#1 m2#1" || string(got[0].Body) != `{"type":"m1"}` || got[0].Topic != "hooks" || !got[0].CreatedAt.Equal(epoch()) {
		t.Fatalf("claimed %s (%+v), want m1#1 m2#1 with the first body", ids(got), got)
	}
}

// A claim keeps others out until it runs out; a retry is due at its time;
// a zero retry time gives up; an acknowledged message is gone.
func testOutboxClaimsRetriesAndGivesUp(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	o := outboxOf(t, s)
	h := headAt("s1", 1, "paused")
	h.Outbox = []store.Message{message("m1"), message("m2"), message("m3")}
	must(t, s.Append(ctx, h, 0, []session.Event{event(1)}))
	t0 := epoch().Add(time.Second)
	claim := func(owner string, at time.Time, limit int) string {
		t.Helper()
		got, err := o.ClaimMessages(ctx, owner, at, at.Add(30*time.Second), limit)
		must(t, err)
		return ids(got)
	}
	if got := claim("a", t0, 2); got != "m1#1 m2#1" {
		t.Fatalf("first claim %q", got)
	}
	if got := claim("b", t0.Add(time.Second), 10); got != "m3#1" {
		t.Fatalf("second claim %q: claimed messages must stay out", got)
	}
	must(t, o.AckMessage(ctx, "m1"))
	must(t, o.RetryMessage(ctx, "m2", "a", t0.Add(10*time.Second), "503 from the receiver"))
	if err := o.RetryMessage(ctx, "m3", "a", t0, "not mine"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("retry of another's claim: %v, want ErrConflict", err)
	}
	if got := claim("a", t0.Add(5*time.Second), 10); got != "" {
		t.Fatalf("claim before the retry time %q", got)
	}
	if got := claim("a", t0.Add(10*time.Second), 10); got != "m2#2" {
		t.Fatalf("claim at the retry time %q", got)
	}
	must(t, o.RetryMessage(ctx, "m2", "a", time.Time{}, "gave up"))
	// m3's claimant (b) stopped: its claim runs out and the message comes back.
	if got := claim("c", t0.Add(time.Hour), 10); got != "m3#2" {
		t.Fatalf("claim after b's ran out %q, want m3 again and m2 given up", got)
	}
}

// Two processes claiming at once never get the same message.
func testOutboxMessageClaimedByOneProcess(t *testing.T, open func(t *testing.T) (a, b store.Store)) {
	ctx := context.Background()
	a, b := open(t)
	h := headAt("s1", 1, "paused")
	for i := range 40 {
		h.Outbox = append(h.Outbox, message(fmt.Sprintf("m%02d", i)))
	}
	must(t, a.Append(ctx, h, 0, []session.Event{event(1)}))
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	for i, s := range []store.Store{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("p%d", i)
			for {
				got, err := outboxOf(t, s).ClaimMessages(ctx, owner, epoch().Add(time.Second), epoch().Add(time.Minute), 3)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, m := range got {
					if prev, dup := seen[m.ID]; dup {
						t.Errorf("%s claimed by %s and %s", m.ID, prev, owner)
					}
					seen[m.ID] = owner
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 40 {
		t.Fatalf("%d messages claimed, want 40", len(seen))
	}
}

func testBlobsKeepTheFirstValue(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	b, ok := open(t).(store.Blobs)
	if !ok {
		t.Fatal("the store does not implement store.Blobs")
	}
	if _, err := blob(ctx, b, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing blob: %v", err)
	}
	big := []byte(strings.Repeat("x", 3<<20))
	must(t, b.PutBlob(ctx, "k", big))
	must(t, b.PutBlob(ctx, "k", []byte("other")))
	got, err := blob(ctx, b, "k")
	if err != nil || len(got) != len(big) {
		t.Fatalf("blob: %d bytes, %v", len(got), err)
	}
}

func testSnapshotBlobsCommitWithTheHead(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	b, ok := s.(store.Blobs)
	if !ok {
		t.Fatal("the store does not implement store.Blobs")
	}
	must(t, s.Append(ctx, headAt("s1", 1, "running"), 0, []session.Event{event(1)}))
	h := headAt("s1", 2, "running")
	h.Snapshot = []byte(`{"root":2}`)
	h.Blobs = []store.Blob{{Key: "c1", Data: []byte("one")}, {Key: "c2", Data: []byte("two")}}
	must(t, s.Append(ctx, h, 1, []session.Event{event(2)}))
	got, err := b.GetBlobs(ctx, []string{"c2", "c1", "c2"})
	if err != nil || len(got) != 3 || string(got[0]) != "two" || string(got[1]) != "one" || string(got[2]) != "two" {
		t.Fatalf("GetBlobs = %q, %v", got, err)
	}
	if _, err := b.GetBlobs(ctx, []string{"c1", "missing"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetBlobs with a missing key: %v", err)
	}
	// A refused append writes none of its blobs; a later one keeps the first value.
	h = headAt("s1", 3, "x")
	h.Blobs = []store.Blob{{Key: "c3", Data: []byte("three")}}
	if err := s.Append(ctx, h, 1, []session.Event{event(3)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale append: %v", err)
	}
	if _, err := blob(ctx, b, "c3"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused append wrote its blob: %v", err)
	}
	h = headAt("s1", 3, "paused")
	h.Blobs = []store.Blob{{Key: "c1", Data: []byte("other")}}
	must(t, s.Append(ctx, h, 2, []session.Event{event(3)}))
	if got, err := blob(ctx, b, "c1"); err != nil || string(got) != "one" {
		t.Fatalf("blob c1 = %q, %v", got, err)
	}
	if h, _ := s.Head(ctx, "s1"); h.Blobs != nil {
		t.Fatal("Head returned blobs")
	}
}

// blob reads one value with GetBlobs.
func blob(ctx context.Context, b store.Blobs, key string) ([]byte, error) {
	got, err := b.GetBlobs(ctx, []string{key})
	if err != nil {
		return nil, err
	}
	return got[0], nil
}
