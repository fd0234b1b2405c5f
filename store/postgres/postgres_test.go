package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/storetest"
)

// PostgresURL returns the test server's URL; .ci/run starts a throwaway
// cluster and sets CAIRN_TEST_POSTGRES.
func postgresURL(t *testing.T) string {
	url := os.Getenv("CAIRN_TEST_POSTGRES")
	if url == "" {
		t.Skip("CAIRN_TEST_POSTGRES is not set; .ci/run starts a PostgreSQL server and sets it (see .ci/postgres)")
	}
	return url
}

var dbCounter atomic.Int64

// freshDatabase creates an empty database for one subtest.
func freshDatabase(t *testing.T, url string) string {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("cairn_t%d_%d", os.Getpid(), dbCounter.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, url)
		if err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") // best effort, at cleanup
			c.Close(ctx)
		}
	})
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
}

func TestPostgresConformance(t *testing.T) {
	url := postgresURL(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := postgres.Open(context.Background(), freshDatabase(t, url))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestPostgresShared(t *testing.T) {
	url := postgresURL(t)
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		db := freshDatabase(t, url)
		var out [2]store.Store
		for i := range out {
			s, err := postgres.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			out[i] = s
		}
		return out[0], out[1]
	})
}

// Concurrent appends share transactions (group commit); one that fails
// (a NUL byte PostgreSQL refuses in text) fails alone, a stale one is a
// conflict, and every other is written.
func TestGroupCommitFailsAloneAndBatches(t *testing.T) {
	ctx := context.Background()
	s, err := postgres.Open(ctx, freshDatabase(t, postgresURL(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Now().UTC()
	head := func(id string, seq int64) store.Head {
		return store.Head{ID: id, Agent: "main", Status: "running", Seq: seq, CreatedAt: t0, UpdatedAt: t0, Summary: []byte(`{}`)}
	}
	ev := func(seq int64, typ string) []session.Event {
		return []session.Event{{Seq: seq, Type: session.EventType(typ), Time: t0, Data: []byte(`{}`)}}
	}
	const n = 64
	for round := range 3 {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("r%d-s%d", round, i)
				typ := "session_started"
				if i == 7 {
					typ = "bad\x00type"
				}
				if errs[i] = s.Append(ctx, head(id, 1), 0, ev(1, typ)); errs[i] != nil || i != 9 {
					return
				}
				errs[i] = s.Append(ctx, head(id, 2), 0, ev(2, "user_message")) // stale: the session exists
			}()
		}
		wg.Wait()
		for i, err := range errs {
			switch {
			case i == 7 && err == nil:
				t.Fatalf("round %d: the append with a NUL byte was written", round)
			case i == 9 && !errors.Is(err, store.ErrConflict):
				t.Fatalf("round %d: stale append: %v", round, err)
			case i != 7 && i != 9 && err != nil:
				t.Fatalf("round %d: append %d failed with another's error: %v", round, i, err)
			}
		}
		for i := range n {
			evs, err := s.Events(ctx, fmt.Sprintf("r%d-s%d", round, i), 0)
			if i != 7 && (err != nil || len(evs) != 1) {
				t.Fatalf("round %d: session %d has %d events, %v", round, i, len(evs), err)
			}
		}
	}
	commits, appends := s.Stats()
	t.Logf("%d appends in %d commits", appends, commits)
	if commits >= appends {
		t.Fatalf("%d appends took %d commits: nothing was batched", appends, commits)
	}
}

// An append to a closed store fails at once instead of waiting for a
// writer that is gone.
func TestAppendAfterCloseFails(t *testing.T) {
	ctx := context.Background()
	s, err := postgres.Open(ctx, freshDatabase(t, postgresURL(t)))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	done := make(chan error, 1)
	go func() {
		t0 := time.Now()
		done <- s.Append(ctx, store.Head{ID: "late", Seq: 1, Status: "running", CreatedAt: t0, UpdatedAt: t0, Summary: []byte(`{}`)}, 0,
			[]session.Event{{Seq: 1, Type: "session_started", Time: t0, Data: []byte(`{}`)}})
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("an append to a closed store succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an append to a closed store hangs")
	}
}

// Every listing walks an index at any depth, in PostgreSQL's own words:
// the deep page of the unfiltered listing and the inbox by kind walk a
// range of their index (storetest.RunUpgrades checks that a missing one is
// noticed).
func TestPlansWalkIndexes(t *testing.T) {
	ctx := context.Background()
	url := freshDatabase(t, postgresURL(t))
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if errs := storetest.PlanProblems(ctx, s); len(errs) != 0 {
		t.Fatalf("with every index: %v", errs)
	}
	plan, _ := s.ExplainList(ctx, store.ListOptions{Limit: 101, After: store.Position{UpdatedAt: time.Now(), ID: "x"}})
	t.Logf("the deep page of the unfiltered listing:\n%s", plan)
	if !strings.Contains(plan, "Index Scan using cairn_sessions_order") || !strings.Contains(plan, "Index Cond: (ROW(updated_at, id) < ROW(") {
		t.Errorf("the deep page does not walk a range of cairn_sessions_order:\n%s", plan)
	}

	// The inbox by kind walks that kind's partial index, at depth too.
	plan, _ = s.ExplainList(ctx, store.ListOptions{Status: "paused", Kind: session.KindInput, Limit: 101, After: store.Position{UpdatedAt: time.Now(), ID: "x"}})
	if !strings.Contains(plan, "Index Scan using cairn_sessions_paused_input") || !strings.Contains(plan, "Index Cond: (ROW(updated_at, id) < ROW(") {
		t.Errorf("the inbox by kind input, at depth:\n%s", plan)
	}
}

// A database of an older version is upgraded on open, and the plan check
// notices a missing index (storetest.RunUpgrades).
func TestUpgrades(t *testing.T) {
	storetest.RunUpgrades(t, func(t *testing.T) storetest.SQLStore {
		url := freshDatabase(t, postgresURL(t))
		return storetest.SQLStore{
			Open: func(t *testing.T) interface {
				store.Store
				storetest.Explainer
			} {
				s, err := postgres.Open(context.Background(), url)
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			Exec: func(t *testing.T, q string) {
				ctx := context.Background()
				conn, err := pgx.Connect(ctx, url)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(ctx)
				if _, err := conn.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			},
			DropOwner:          `ALTER TABLE cairn_sessions DROP COLUMN owner`,
			DropTenant:         `ALTER TABLE cairn_sessions DROP COLUMN tenant`,        // its indexes go with it
			DropPendingKinds:   `ALTER TABLE cairn_sessions DROP COLUMN pending_kinds`, // its indexes go with it
			DropListingIndex:   `DROP INDEX cairn_sessions_order; DROP INDEX cairn_sessions_status_order`,
			DropInputKindIndex: `DROP INDEX cairn_sessions_paused_input`,
		}
	})
}

// A process of a version before pending_kinds writes sessions without it
// (a rolling upgrade): the inbox by kind still finds the ones it pauses,
// and forgets the ones it resumes.
func TestOlderWritersKeepPendingKinds(t *testing.T) {
	ctx := context.Background()
	url := freshDatabase(t, postgresURL(t))
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// mixed: paused for an approval by this version, then resumed and
	// paused for a wait on a system by an older one.
	at := time.Now().Add(time.Hour)
	mixed := store.Head{ID: "mixed", Agent: "main", Status: "paused", Seq: 1, CreatedAt: at, UpdatedAt: at,
		Summary: []byte(`{"interrupts":[{"id":"i1","kind":"approval"}]}`), PendingKinds: store.KindBit(session.KindApproval)}
	if err := s.Append(ctx, mixed, 0, []session.Event{{Seq: 1, Type: "user_message", Time: at, Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	// The statements of the version before the column, as it wrote them.
	insert := `INSERT INTO cairn_sessions(id, agent, status, seq, created_at, updated_at, summary, lease_owner, lease_until, next_expiry, owner)
		VALUES ($1, 'main', $2, 1, now(), now() + $3 * interval '1 second', $4, '', NULL, NULL, '')`
	update := `UPDATE cairn_sessions SET status=$2, seq=2, summary=COALESCE($3, summary) WHERE id=$1`
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{insert, []any{"paused", "paused", 1, []byte(`{"interrupts":[{"id":"i1","kind":"input"}]}`)}},
		{insert, []any{"resumed", "paused", 2, []byte(`{"interrupts":[{"id":"i1","kind":"input"}]}`)}},
		{insert, []any{"later", "running", 3, []byte(`{"interrupts":[]}`)}},
		{update, []any{"later", "paused", []byte(`{"interrupts":[{"id":"i2","kind":"external"}]}`)}},
		{update, []any{"resumed", "running", nil}},
		{update, []any{"mixed", "running", []byte(`{"interrupts":[]}`)}},
		{update, []any{"mixed", "paused", []byte(`{"interrupts":[{"id":"i2","kind":"external"}]}`)}},
	} {
		if _, err := conn.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	storetest.CheckKinds(t, s, map[session.Kind]string{session.KindInput: "paused", session.KindExternal: "mixed,later", session.KindApproval: ""})
}
