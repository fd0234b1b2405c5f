package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/internal/groupcommit"
)

// The writer is the one connection that writes to the file (group commit).
// Writes of every goroutine queue up; the writer takes what is queued,
// runs each in a savepoint of one transaction (a write that fails is
// rolled back alone), commits once (one fsync with synchronous=full) and
// only then answers each writer. Under load, many sessions' steps share a
// commit; with one writer, nobody waits on SQLite's busy handler in this
// process, and prepared statements live on its connection.

// maxBatch bounds the writes of one transaction.
const maxBatch = 256

// checkpointEvery is how many commits pass between RESTART checkpoints.
// SQLite's automatic checkpoints are passive: with readers always in a
// transaction the WAL is copied back but never starts over, and it grew
// to 20–28× the database (TestWALStaysBoundedUnderLoad). RESTART waits for
// the readers of old frames to finish, so the next commit writes from the
// WAL's start again. It waits at most restartWait, so writes stall little;
// when readers outlast that, it is tried again every checkpointRetry
// commits, each time waiting twice as long (up to maxRestartWait), until it
// succeeds: on a loaded machine reads last longer than any one fixed wait,
// and with 100 ms every time the WAL reached 11× the database.
const (
	checkpointEvery = 128
	checkpointRetry = 16
	restartWait     = 100 * time.Millisecond
	maxRestartWait  = 1600 * time.Millisecond
)

// conn is what a write runs on: the writer's connection, inside the
// batch's transaction (BEGIN IMMEDIATE … COMMIT issued on it directly, so
// that statements prepared on the connection are reused: database/sql
// re-prepares a connection's statement for every sql.Tx).
type conn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

type job struct {
	ctx   context.Context
	run   func(ctx context.Context, tx conn) error
	after func() // on success, once committed
	err   error
	*groupcommit.Ticket
}

type writer struct {
	conn    *sql.Conn
	jobs    chan *job
	stopped chan struct{}
	wg      sync.WaitGroup
	stmts   map[string]*sql.Stmt // prepared on conn
	// batches and writes count transactions and the writes they held.
	batches, writes atomic.Int64
	// retryWait is the wait of the next RESTART when the last one found
	// readers busy (0: it did not).
	retryWait time.Duration
}

func newWriter(ctx context.Context, db *sql.DB) (*writer, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	w := &writer{conn: conn, jobs: make(chan *job, maxBatch), stopped: make(chan struct{}), stmts: map[string]*sql.Stmt{}}
	w.wg.Add(1)
	go w.loop()
	return w, nil
}

// stmt returns query prepared on the writer's connection (once).
func (w *writer) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	st, ok := w.stmts[query]
	if !ok {
		var err error
		if st, err = w.conn.PrepareContext(ctx, query); err != nil {
			return nil, err
		}
		w.stmts[query] = st
	}
	return st, nil
}

func (w *writer) close() {
	close(w.stopped)
	w.wg.Wait()
	for _, st := range w.stmts {
		st.Close()
	}
	w.conn.Close()
}

func (w *writer) loop() {
	defer w.wg.Done()
	batch := make([]*job, 0, maxBatch)
	for {
		select {
		case <-w.stopped:
			return
		case j := <-w.jobs:
			batch = append(batch[:0], j)
		}
	more:
		for len(batch) < maxBatch {
			select {
			case j := <-w.jobs:
				batch = append(batch, j)
			default:
				break more
			}
		}
		w.commit(batch)
	}
}

// exec runs query, prepared once on the writer's connection, in the
// current transaction: appends and the transaction control of every batch
// (BEGIN, SAVEPOINT, RELEASE, COMMIT) are parsed once, not per use.
func (w *writer) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := w.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// commit runs a batch in one transaction.
func (w *writer) commit(batch []*job) {
	ctx := context.Background()
	var taken []*job
	for _, j := range batch {
		if j.Take() {
			taken = append(taken, j)
		}
	}
	if len(taken) == 0 {
		return
	}
	finish := func(err error) {
		for _, j := range taken {
			if j.err == nil {
				j.err = err
			}
			j.Finish()
		}
	}
	tx := w.conn
	rollback := func() { _, _ = w.exec(ctx, `ROLLBACK`) } // after a failure, which is what is reported
	if _, err := w.exec(ctx, `BEGIN IMMEDIATE`); err != nil {
		finish(fmt.Errorf("sqlite: begin: %w", err))
		return
	}
	for _, j := range taken {
		if len(taken) == 1 {
			j.err = j.run(context.WithoutCancel(j.ctx), tx)
			continue
		}
		if _, err := w.exec(ctx, `SAVEPOINT w`); err != nil {
			j.err = err
			continue
		}
		if j.err = j.run(context.WithoutCancel(j.ctx), tx); j.err != nil {
			if _, err := w.exec(ctx, `ROLLBACK TO w`); err != nil {
				rollback()
				finish(fmt.Errorf("sqlite: roll back one write of a batch: %w", err))
				return
			}
		}
		if _, err := w.exec(ctx, `RELEASE w`); err != nil {
			rollback()
			finish(fmt.Errorf("sqlite: release: %w", err))
			return
		}
	}
	ok := false
	for _, j := range taken {
		ok = ok || j.err == nil
	}
	if !ok {
		rollback()
		finish(nil)
		return
	}
	if _, err := w.exec(ctx, `COMMIT`); err != nil {
		rollback() // a failed COMMIT may leave the transaction open
		err = fmt.Errorf("sqlite: commit: %w", err)
		for _, j := range taken {
			if j.err == nil {
				j.err = err
			}
		}
		finish(nil)
		return
	}
	w.batches.Add(1)
	w.writes.Add(int64(len(taken)))
	for _, j := range taken {
		if j.err == nil && j.after != nil {
			j.after()
		}
	}
	finish(nil)
	if n := w.batches.Load(); n%checkpointEvery == 0 || w.retryWait > 0 && n%checkpointRetry == 0 {
		wait := cmp.Or(w.retryWait, restartWait)
		w.retryWait = 0
		if !w.restart(ctx, wait) {
			w.retryWait = min(2*wait, maxRestartWait)
		}
	}
}

// restart runs a RESTART checkpoint that waits at most wait for readers,
// and reports whether the WAL can start over.
func (w *writer) restart(ctx context.Context, wait time.Duration) bool {
	if _, err := w.conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout=%d`, wait.Milliseconds())); err != nil {
		return false
	}
	defer func() {
		// Restoring the usual timeout fails only with the connection, which
		// the next commit then reports.
		_, _ = w.conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout=%d`, busyTimeout))
	}()
	var busy, frames, done int
	err := w.conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(RESTART)`).Scan(&busy, &frames, &done)
	return err == nil && busy == 0
}

// errClosed: the store was closed.
var errClosed = errors.New("sqlite: the store is closed")

// write runs fn in the writer's next transaction and waits until it is
// committed (after runs then, before write returns). A caller whose ctx
// ends while its write is still queued gets ctx's error and the write
// never runs; once the writer took it, write waits for the outcome.
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, tx conn) error, after func()) error {
	j := &job{ctx: ctx, run: fn, after: after, Ticket: groupcommit.NewTicket()}
	select {
	case s.w.jobs <- j:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.w.stopped:
		return errClosed
	}
	if err := j.Await(ctx, s.w.stopped, errClosed); err != nil {
		return err
	}
	return j.err
}

// Stats reports the writer's transactions and the writes they held since
// the store opened: writes/commits is the mean group-commit batch.
func (s *Store) Stats() (commits, writes int64) {
	return s.w.batches.Load(), s.w.writes.Load()
}
