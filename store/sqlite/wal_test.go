package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// Under steady writes with readers always busy, the WAL stays bounded:
// the writer's RESTART checkpoints let it start over (with passive ones
// only it reached 20–28× the database here).
func TestWALStaysBoundedUnderLoad(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A long session, read whole by the readers: reads of a few ms each,
	// always overlapping, as a busy server's are.
	data := []byte(fmt.Sprintf(`{"text":"%0400d"}`, 0))
	now := time.Now()
	var long []session.Event
	for seq := int64(1); seq <= 300; seq++ {
		long = append(long, session.Event{Seq: seq, Type: "user_message", Time: now, Data: data})
	}
	if err := s.Append(ctx, store.Head{ID: "long", Agent: "main", Status: "paused", Seq: 300, CreatedAt: now, UpdatedAt: now, Summary: data}, 0, long); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	var reads atomic.Int64
	for range 8 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Events(ctx, "long", 0); err == nil {
					reads.Add(1)
				}
			}
		}()
	}
	var wg sync.WaitGroup
	var maxWAL atomic.Int64
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				id := fmt.Sprintf("w%d-%d", w, i)
				now := time.Now()
				for seq := int64(1); seq <= 4; seq++ {
					h := store.Head{ID: id, Agent: "main", Status: "running", Seq: seq, CreatedAt: now, UpdatedAt: now, Summary: data}
					if err := s.Append(ctx, h, seq-1, []session.Event{{Seq: seq, Type: "user_message", Time: now, Data: data}}); err != nil {
						t.Error(err)
						return
					}
				}
				if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > maxWAL.Load() {
					maxWAL.Store(fi.Size())
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	db, _ := os.Stat(path)
	t.Logf("database %d KB, largest WAL %d KB, %d reads", db.Size()>>10, maxWAL.Load()>>10, reads.Load())
	if maxWAL.Load() > 4*db.Size()+16<<20 {
		t.Fatalf("the WAL reached %d KB against a %d KB database", maxWAL.Load()>>10, db.Size()>>10)
	}
}

// A RESTART checkpoint that finds a reader still on old frames is tried
// again with twice the wait each time (on a loaded machine reads outlast
// any one fixed wait: with 100 ms every time, TestWALStaysBoundedUnderLoad
// saw the WAL reach 11× the database), and the wait starts over once one
// succeeds.
func TestRestartWaitGrowsWhileReadersOutlastIt(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seq := int64(0)
	commit := func(n int) {
		t.Helper()
		for range n {
			seq++
			now := time.Now()
			h := store.Head{ID: "s", Agent: "main", Status: "running", Seq: seq, CreatedAt: now, UpdatedAt: now, Summary: []byte(`{}`)}
			if err := s.Append(ctx, h, seq-1, []session.Event{{Seq: seq, Type: "user_message", Time: now, Data: []byte(`{}`)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// upTo commits until the writer's batch count is the next multiple of
	// every that is a RESTART's turn, then one more: the writer runs a
	// RESTART after answering its batch, and has finished it once it
	// answers the next.
	upTo := func(every int64) {
		t.Helper()
		commit(int(every - s.w.batches.Load()%every))
		commit(1)
	}
	commit(1)
	// A reader holds a snapshot of the WAL until released.
	reader, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	tx, err := reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	upTo(checkpointEvery)
	if s.w.retryWait != 2*restartWait {
		t.Fatalf("after a RESTART the reader blocked: next wait %s, want %s", s.w.retryWait, 2*restartWait)
	}
	upTo(checkpointRetry)
	if s.w.retryWait != 4*restartWait {
		t.Fatalf("after a second: next wait %s, want %s", s.w.retryWait, 4*restartWait)
	}
	tx.Rollback()
	upTo(checkpointRetry)
	if s.w.retryWait != 0 {
		t.Fatalf("the RESTART after the reader left did not succeed: next wait %s", s.w.retryWait)
	}
	upTo(checkpointEvery)
	if s.w.retryWait != 0 {
		t.Fatalf("a later RESTART failed: next wait %s", s.w.retryWait)
	}
}
