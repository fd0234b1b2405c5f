package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairnhq/cairn/internal/groupcommit"
)

// The writer batches appends (group commit). An append is one statement
// that reports whether it wrote (a stale seq or a lease held by another
// process writes nothing, without an error), so many sessions' appends can
// share a transaction: the writer takes what is queued, sends it in one
// round trip (a pgx batch) and commits once. That matters because each
// append notifies the other processes (NOTIFY), and PostgreSQL commits
// notifying transactions one at a time, each waiting for its WAL flush:
// one transaction per append caps a database at one append per flush.

// maxBatch bounds the appends of one transaction.
const maxBatch = 128

type appendJob struct {
	session string // locked by the statement: batches lock in session order
	query   string
	args    []any
	written int
	err     error
	*groupcommit.Ticket
}

type writer struct {
	pool    *pgxpool.Pool
	jobs    chan *appendJob
	stopped context.Context
	exited  chan struct{} // closed when the loop has returned
	wg      sync.WaitGroup
	// batches and appends count transactions and the appends they held.
	batches, appends atomic.Int64
}

func newWriter(stopped context.Context, pool *pgxpool.Pool) *writer {
	w := &writer{pool: pool, jobs: make(chan *appendJob, maxBatch), stopped: stopped, exited: make(chan struct{})}
	w.wg.Add(1)
	go w.loop()
	return w
}

// do runs an append statement in the next batch and returns the count it
// selected (1: written). A caller whose ctx ends while its append is
// queued gets ctx's error and the append never runs; once the writer has
// taken it, the caller waits for the outcome, which is the truth.
func (w *writer) do(ctx context.Context, session, query string, args []any) (int, error) {
	j := &appendJob{session: session, query: query, args: args, Ticket: groupcommit.NewTicket()}
	select {
	case w.jobs <- j:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-w.stopped.Done():
		return 0, errClosed
	}
	// exited: queued as the store closed, after the writer's last drain.
	if err := j.Await(ctx, w.exited, errClosed); err != nil {
		return 0, err
	}
	return j.written, j.err
}

// errClosed: the store was closed.
var errClosed = errors.New("postgres store: closed")

func (w *writer) loop() {
	defer w.wg.Done()
	defer close(w.exited)
	for {
		var batch []*appendJob
		select {
		case j := <-w.jobs:
			batch = append(batch, j)
		case <-w.stopped.Done():
			w.drain()
			return
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case j := <-w.jobs:
				batch = append(batch, j)
			default:
				break fill
			}
		}
		live := batch[:0]
		for _, j := range batch {
			if j.Take() {
				live = append(live, j)
			}
		}
		if len(live) > 0 {
			// Every process's batches lock session rows in the same order,
			// so two batches cannot deadlock; one session's appends keep
			// their order.
			slices.SortStableFunc(live, func(a, b *appendJob) int { return strings.Compare(a.session, b.session) })
			w.run(live)
		}
	}
}

// drain answers what is still queued once the store is closed.
func (w *writer) drain() {
	for {
		select {
		case j := <-w.jobs:
			if j.Take() {
				j.err = errClosed
				j.Finish()
			}
		default:
			return
		}
	}
}

// run commits a batch in one transaction: a pgx batch is one round trip
// whose statements PostgreSQL runs in one implicit transaction, committed
// at its end (no BEGIN or COMMIT round trips). If any statement fails,
// nothing of the batch is kept and each append runs again alone, so an
// error belongs to its own append only.
func (w *writer) run(batch []*appendJob) {
	ctx := context.WithoutCancel(w.stopped)
	w.batches.Add(1)
	w.appends.Add(int64(len(batch)))
	if len(batch) == 1 { // one statement is its own transaction: one round trip
		j := batch[0]
		j.err = w.pool.QueryRow(ctx, j.query, j.args...).Scan(&j.written)
		j.Finish()
		return
	}
	var b pgx.Batch
	for _, j := range batch {
		b.Queue(j.query, j.args...)
	}
	res := w.pool.SendBatch(ctx, &b)
	var err error
	for _, j := range batch {
		if err = res.QueryRow().Scan(&j.written); err != nil {
			break
		}
	}
	// Close reads up to the end of the batch: only then has it committed.
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	for _, j := range batch {
		if err != nil {
			j.err = w.pool.QueryRow(ctx, j.query, j.args...).Scan(&j.written)
		}
		j.Finish()
	}
}

// Stats reports the writer's transactions and the appends they held since
// the store opened: appends/commits is the mean group-commit batch.
func (s *Store) Stats() (commits, appends int64) {
	return s.w.batches.Load(), s.w.appends.Load()
}
