package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// walTrees returns the B-trees (tables and indexes) whose pages the WAL
// holds frames of, after the checkpoint that emptied it: what the commits
// since wrote.
func walTrees(t *testing.T, path string) map[string]int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	names := map[uint32]string{}
	rows, err := db.Query(`SELECT name, pageno FROM dbstat`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var page uint32
		if err := rows.Scan(&name, &page); err != nil {
			t.Fatal(err)
		}
		names[page] = name
	}
	rows.Close()
	wal, err := os.ReadFile(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	trees := map[string]int{}
	if len(wal) < 32 {
		return trees
	}
	pageSize := int(binary.BigEndian.Uint32(wal[8:12]))
	for off := 32; off+24+pageSize <= len(wal); off += 24 + pageSize {
		trees[names[binary.BigEndian.Uint32(wal[off:off+4])]]++
	}
	return trees
}

func emptyWAL(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
}

// A quiet append (store.Head.Quiet: a running turn's tool step) writes
// the session's row, its events and the change counter, and no page of a
// listing index; a loud one writes those too.
func TestQuietCommitsWriteNoListingIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Now()
	h := store.Head{ID: "s1", Agent: "main", Status: session.StatusRunning, Seq: 1, CreatedAt: at, UpdatedAt: at, Summary: []byte(`{}`),
		Lease: store.Lease{Owner: "n1", Until: at.Add(time.Minute)}}
	ev := func(seq int64, typ session.EventType) []session.Event {
		return []session.Event{{Seq: seq, Type: typ, Time: at, Frame: "f1", Agent: "main", Data: []byte(`{}`)}}
	}
	if err := s.Append(ctx, h, 0, ev(1, session.EventSessionStarted)); err != nil {
		t.Fatal(err)
	}
	listing := func(trees map[string]int) []string {
		var out []string
		for name := range trees {
			if strings.HasPrefix(name, "sessions_") && name != "sessions_rev" {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	emptyWAL(t, path)
	h.Seq, h.Summary, h.Quiet = 2, nil, true
	if err := s.Append(ctx, h, 1, ev(2, session.EventToolResult)); err != nil {
		t.Fatal(err)
	}
	trees := walTrees(t, path)
	if got := listing(trees); len(got) != 0 || trees["events"] == 0 || trees["sessions"] == 0 {
		t.Fatalf("a quiet append wrote listing indexes %v (all: %v)", got, trees)
	}
	emptyWAL(t, path)
	h.Seq, h.Status, h.Summary, h.Quiet = 3, session.StatusCompleted, []byte(`{"done":true}`), false
	h.Lease.Until = at
	if err := s.Append(ctx, h, 2, ev(3, session.EventTurnCompleted)); err != nil {
		t.Fatal(err)
	}
	// The listing indexes with a place for it, and no more: none for the
	// unfiltered listing (a merge of status walks) nor the owner's (the
	// session has none).
	if got := listing(walTrees(t, path)); !slices.Equal(got, []string{"sessions_agent_order", "sessions_status_order"}) {
		t.Fatalf("a loud append wrote listing indexes %v, want sessions_agent_order and sessions_status_order", got)
	}
}
