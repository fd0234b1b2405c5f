package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/store/storetest"
)

func TestSQLiteConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cairn.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestSynchronousOption(t *testing.T) {
	dir := t.TempDir()
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, "a.db")+"?synchronous=normal")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := sqlite.Open(context.Background(), filepath.Join(dir, "b.db")+"?synchronous=off"); err == nil {
		t.Fatal("synchronous=off accepted")
	}
	if _, err := sqlite.Open(context.Background(), filepath.Join(dir, "c.db")+"?cache=shared"); err == nil {
		t.Fatal("unknown option accepted")
	}
}

func TestSQLiteShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		path := filepath.Join(t.TempDir(), "cairn.db")
		var out [2]store.Store
		for i := range out {
			s, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			out[i] = s
		}
		return out[0], out[1]
	})
}

// Every listing walks an index at any depth, in SQLite's own words: the
// deep page of the unfiltered listing, the change feed and the inbox by
// kind search a range of their index (storetest.RunUpgrades checks that a
// missing one is noticed).
func TestPlansWalkIndexes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if errs := storetest.PlanProblems(ctx, s); len(errs) != 0 {
		t.Fatalf("with every index: %v", errs)
	}
	plan, _ := s.ExplainList(ctx, store.ListOptions{Limit: 101, After: store.Position{UpdatedAt: time.Now(), ID: "x"}})
	t.Logf("the deep page of the unfiltered listing:\n%s", plan)
	// One range of the status index per status, merged: the listing has
	// no index of its own for every commit to write.
	if n := strings.Count(plan, "SEARCH sessions USING INDEX sessions_status_order (status=? AND updated_at<?)"); n != len(session.AllStatuses()) || !strings.Contains(plan, "MERGE (UNION ALL)") {
		t.Errorf("the deep page does not merge a range of sessions_status_order per status:\n%s", plan)
	}

	// The change feed (what GET /v1/events follows) reads the rev index.
	if plan, err := s.ExplainChanges(ctx, 42); err != nil || !strings.Contains(plan, "USING INDEX sessions_rev (rev>?)") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("the change feed's plan: %v\n%s", err, plan)
	}

	// The inbox by kind walks that kind's partial index, at depth too.
	plan, _ = s.ExplainList(ctx, store.ListOptions{Status: "paused", Kind: session.KindInput, Limit: 101, After: store.Position{UpdatedAt: time.Now(), ID: "x"}})
	if !strings.Contains(plan, "USING INDEX sessions_paused_input (updated_at<?)") {
		t.Errorf("the inbox by kind input, at depth:\n%s", plan)
	}
}

// A file of an older version is upgraded on open, and the plan check
// notices a missing index (storetest.RunUpgrades).
func TestUpgrades(t *testing.T) {
	storetest.RunUpgrades(t, func(t *testing.T) storetest.SQLStore {
		path := filepath.Join(t.TempDir(), "cairn.db")
		drop := "DROP TRIGGER sessions_kinds_on_insert; DROP TRIGGER sessions_kinds_on_pause; DROP TRIGGER sessions_kinds_on_resume; "
		dropTenant := "DROP INDEX sessions_tenant_order; DROP INDEX sessions_tenant_status_order; DROP INDEX sessions_tenant_agent_order; DROP INDEX sessions_owned_order; "
		for _, k := range store.IndexedKinds() {
			drop += "DROP INDEX sessions_paused_" + string(k) + "; DROP INDEX sessions_tenant_paused_" + string(k) + "; "
			dropTenant += "DROP INDEX sessions_tenant_paused_" + string(k) + "; "
		}
		return storetest.SQLStore{
			Open: func(t *testing.T) interface {
				store.Store
				storetest.Explainer
			} {
				s, err := sqlite.Open(context.Background(), path)
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			Exec: func(t *testing.T, q string) {
				db, err := sql.Open("sqlite", path)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			},
			DropOwner:          `DROP INDEX sessions_owned_order; ALTER TABLE sessions DROP COLUMN owner`,
			DropTenant:         dropTenant + `ALTER TABLE sessions DROP COLUMN tenant`,
			DropPendingKinds:   drop + `ALTER TABLE sessions DROP COLUMN pending_kinds`,
			DropListingIndex:   `DROP INDEX sessions_status_order`,
			DropInputKindIndex: `DROP INDEX sessions_paused_input`,
		}
	})
}

// Blobs stored before purges existed (no record of which session wrote
// them) are never purged: another old session may share them.
func TestBlobsFromBeforeRefsAreKept(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	h := store.Head{ID: "old", Agent: "main", Status: "completed", Seq: 1, CreatedAt: at, UpdatedAt: at, Summary: []byte(`{}`),
		Snapshot: []byte(`{}`), Blobs: []store.Blob{{Key: "k", Data: []byte("v")}}}
	if err := s.Append(ctx, h, 0, []session.Event{{Seq: 1, Type: "user_message", Time: at, Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, _ := sql.Open("sqlite", path)
	if _, err := db.Exec(`DROP TABLE blob_refs`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Purge(ctx, store.PurgeOptions{Status: "completed", Before: at.Add(time.Hour)}); err != nil || len(got) != 1 {
		t.Fatalf("purge: %v %v", got, err)
	}
	if got, err := s.GetBlobs(ctx, []string{"k"}); err != nil || string(got[0]) != "v" {
		t.Fatalf("the old blob: %q %v", got, err)
	}
}

// A new file is made with auto_vacuum=incremental (so purges give space
// back), and reads never wait for the writer: not even on a connection the
// pool opens while another process holds the write lock. Setting
// auto_vacuum on each new connection, as an earlier version did, took the
// write lock there, and under load reads failed with SQLITE_BUSY.
func TestReadsDoNotWaitForTheWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(ctx, store.Head{ID: "a", Agent: "main", Status: "paused", Seq: 1, CreatedAt: time.Now(), UpdatedAt: time.Now(), Summary: []byte(`{}`)}, 0,
		[]session.Event{{Seq: 1, Type: "user_message", Time: time.Now(), Frame: "f1", Agent: "main", Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var mode int
	if err := other.QueryRow(`PRAGMA auto_vacuum`).Scan(&mode); err != nil || mode != 2 {
		t.Fatalf("auto_vacuum of a new file: %d, %v (want 2, incremental)", mode, err)
	}
	tx, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`UPDATE secrets SET value=value`); err != nil { // takes the write lock
		t.Fatal(err)
	}
	// Sixteen reads at once make the pool open new connections.
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	errs := make(chan error, 16)
	for range 16 {
		go func() {
			_, err := s.Head(ctx, "a")
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Fatalf("a read while another process writes: %v", err)
		}
	}
}

// Several processes starting at once on a file that does not exist yet
// all open it (one of them makes it), and it is made incremental.
func TestOpenANewFileConcurrently(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := sqlite.Open(ctx, path)
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("open: %v", err)
		}
	}
	left, err := filepath.Glob(path + ".new-*")
	if err != nil || len(left) > 0 {
		t.Fatalf("files left from making it: %v, %v", left, err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode int
	if err := db.QueryRow(`PRAGMA auto_vacuum`).Scan(&mode); err != nil || mode != 2 {
		t.Fatalf("auto_vacuum: %d, %v (want 2, incremental)", mode, err)
	}
}

// A process of a version before pending_kinds writes sessions without it
// (a rolling upgrade): the inbox by kind still finds the ones it pauses,
// and forgets the ones it resumes.
func TestOlderWritersKeepPendingKinds(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// mixed: paused for an approval by this version, then resumed and
	// paused for a wait on a system by an older one.
	at := time.Date(2026, 11, 1, 0, 0, 4, 0, time.UTC)
	mixed := store.Head{ID: "mixed", Agent: "main", Status: "paused", Seq: 1, CreatedAt: at, UpdatedAt: at,
		Summary: []byte(`{"interrupts":[{"id":"i1","kind":"approval"}]}`), PendingKinds: store.KindBit(session.KindApproval)}
	if err := s.Append(ctx, mixed, 0, []session.Event{{Seq: 1, Type: "user_message", Time: at, Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	// The statements of the version before the column, as it wrote them.
	for _, q := range []string{
		`UPDATE sessions SET status='running', seq=2, summary=COALESCE('{"interrupts":[]}', summary) WHERE id='mixed'`,
		`UPDATE sessions SET status='paused', seq=3, summary=COALESCE('{"interrupts":[{"id":"i2","kind":"external"}]}', summary) WHERE id='mixed'`,
		`INSERT INTO sessions(id, agent, status, seq, created_at, updated_at, summary, lease_owner, lease_until, next_expiry, owner, rev)
			VALUES ('paused', 'main', 'paused', 1, '2026-11-01T00:00:00.000000000Z', '2026-11-01T00:00:01.000000000Z', '{"interrupts":[{"id":"i1","kind":"input"}]}', '', '', '', '', 1)`,
		`INSERT INTO sessions(id, agent, status, seq, created_at, updated_at, summary, lease_owner, lease_until, next_expiry, owner, rev)
			VALUES ('resumed', 'main', 'paused', 1, '2026-11-01T00:00:00.000000000Z', '2026-11-01T00:00:02.000000000Z', '{"interrupts":[{"id":"i1","kind":"input"}]}', '', '', '', '', 2)`,
		`INSERT INTO sessions(id, agent, status, seq, created_at, updated_at, summary, lease_owner, lease_until, next_expiry, owner, rev)
			VALUES ('later', 'main', 'running', 1, '2026-11-01T00:00:00.000000000Z', '2026-11-01T00:00:03.000000000Z', '{"interrupts":[]}', '', '', '', '', 3)`,
		`UPDATE sessions SET status='paused', seq=2, summary=COALESCE('{"interrupts":[{"id":"i2","kind":"external"}]}', summary) WHERE id='later'`,
		`UPDATE sessions SET status='running', seq=2, summary=COALESCE(NULL, summary) WHERE id='resumed'`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	storetest.CheckKinds(t, s, map[session.Kind]string{session.KindInput: "paused", session.KindExternal: "mixed,later", session.KindApproval: ""})
}

// A new file has 2 KiB pages (a commit's WAL frames are half the size);
// a file made with other pages keeps them and works as before.
func TestPageSize(t *testing.T) {
	ctx := context.Background()
	pageSizeOf := func(path string) int {
		t.Helper()
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow(`PRAGMA page_size`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	fresh := filepath.Join(t.TempDir(), "new.db")
	s, err := sqlite.Open(ctx, fresh)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := pageSizeOf(fresh); n != 2048 {
		t.Fatalf("a new file's page size is %d, want 2048", n)
	}

	old := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA page_size=4096; PRAGMA journal_mode=WAL; CREATE TABLE t(x)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err = sqlite.Open(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	h := store.Head{ID: "s1", Agent: "a", Status: session.StatusCompleted, Seq: 1, CreatedAt: time.Now(), UpdatedAt: time.Now(), Summary: []byte(`{"id":"s1"}`)}
	if err := s.Append(ctx, h, 0, []session.Event{{Seq: 1, Type: session.EventTurnCompleted, Time: time.Now(), Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := pageSizeOf(old); n != 4096 {
		t.Fatalf("an existing file's page size became %d, want its 4096", n)
	}
}
