// Package postgres is a store.Store on PostgreSQL through pgx: one
// transaction per Append, guarded by the session row's seq.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairnhq/cairn/store"
)

const schema = `
CREATE TABLE IF NOT EXISTS cairn_sessions (
	id         TEXT PRIMARY KEY,
	agent      TEXT NOT NULL,
	status     TEXT NOT NULL,
	seq        BIGINT NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	updated_at TIMESTAMPTZ NOT NULL,
	summary    BYTEA NOT NULL
);
CREATE INDEX IF NOT EXISTS cairn_sessions_status ON cairn_sessions(status, updated_at DESC);
CREATE TABLE IF NOT EXISTS cairn_events (
	session_id TEXT NOT NULL,
	seq        BIGINT NOT NULL,
	type       TEXT NOT NULL,
	time       TIMESTAMPTZ NOT NULL,
	frame      TEXT NOT NULL,
	agent      TEXT NOT NULL,
	data       BYTEA NOT NULL,
	PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS cairn_snapshots (session_id TEXT PRIMARY KEY, seq BIGINT NOT NULL, data BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS cairn_secrets (name TEXT PRIMARY KEY, value BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS cairn_used_tokens (id TEXT PRIMARY KEY, used_at TIMESTAMPTZ NOT NULL DEFAULT now());
`

// Store is a store.Store on PostgreSQL.
type Store struct {
	pool *pgxpool.Pool
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url (postgres://…) and creates the
// tables if needed.
func Open(ctx context.Context, url string) (*Store, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	// Concurrent first opens race on CREATE … IF NOT EXISTS; an advisory
	// lock makes the schema step one at a time.
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7305541)`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, schema)
		return err
	}); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store: create schema: %w", err)
	}
	return &Store{pool: pool}, nil
}

// Close closes the pool.
func (s *Store) Close() error { s.pool.Close(); return nil }

// Append implements store.Store.
func (s *Store) Append(ctx context.Context, head store.Head, expectedSeq int64, events []store.Event) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if expectedSeq == 0 {
			tag, err := tx.Exec(ctx, `INSERT INTO cairn_sessions(id, agent, status, seq, created_at, updated_at, summary)
				VALUES ($1,$2,$3,$4,$5,$6,$7) ON CONFLICT (id) DO NOTHING`,
				head.ID, head.Agent, head.Status, head.Seq, head.CreatedAt, head.UpdatedAt, []byte(head.Summary))
			if err != nil {
				return err
			}
			if tag.RowsAffected() != 1 {
				return store.ErrConflict
			}
		} else {
			var summary []byte // NULL keeps the stored summary
			if head.Summary != nil {
				summary = head.Summary
			}
			tag, err := tx.Exec(ctx, `UPDATE cairn_sessions SET status=$1, seq=$2, updated_at=$3, summary=COALESCE($4, summary) WHERE id=$5 AND seq=$6`,
				head.Status, head.Seq, head.UpdatedAt, summary, head.ID, expectedSeq)
			if err != nil {
				return err
			}
			if tag.RowsAffected() != 1 {
				var one int
				if err := tx.QueryRow(ctx, `SELECT 1 FROM cairn_sessions WHERE id=$1`, head.ID).Scan(&one); errors.Is(err, pgx.ErrNoRows) {
					return store.ErrNotFound
				}
				return store.ErrConflict
			}
		}
		rows := make([][]any, len(events))
		for i, e := range events {
			rows[i] = []any{head.ID, e.Seq, e.Type, e.Time, e.Frame, e.Agent, []byte(e.Data)}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"cairn_events"}, []string{"session_id", "seq", "type", "time", "frame", "agent", "data"}, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		if head.Snapshot != nil {
			_, err := tx.Exec(ctx, `INSERT INTO cairn_snapshots(session_id, seq, data) VALUES ($1,$2,$3)
				ON CONFLICT (session_id) DO UPDATE SET seq=excluded.seq, data=excluded.data`, head.ID, head.Seq, head.Snapshot)
			return err
		}
		return nil
	})
	var pgErr *pgconn.PgError
	switch {
	case err == nil, errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
		return err
	case errors.As(err, &pgErr) && pgErr.Code == "23505": // unique violation: a concurrent writer won
		return store.ErrConflict
	}
	return fmt.Errorf("postgres append %s: %w", head.ID, err)
}

// Events implements store.Store.
func (s *Store) Events(ctx context.Context, id string, after int64) ([]store.Event, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, type, time, frame, agent, data FROM cairn_events WHERE session_id=$1 AND seq>$2 ORDER BY seq`, id, after)
	if err != nil {
		return nil, fmt.Errorf("postgres events %s: %w", id, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Event, error) {
		var e store.Event
		var data []byte
		err := row.Scan(&e.Seq, &e.Type, &e.Time, &e.Frame, &e.Agent, &data)
		e.Time, e.Data = e.Time.UTC(), data
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres events %s: %w", id, err)
	}
	if len(out) == 0 {
		if _, err := s.Head(ctx, id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func scanHead(row pgx.Row) (store.Head, error) {
	var h store.Head
	var summary []byte
	err := row.Scan(&h.ID, &h.Agent, &h.Status, &h.Seq, &h.CreatedAt, &h.UpdatedAt, &summary)
	h.CreatedAt, h.UpdatedAt, h.Summary = h.CreatedAt.UTC(), h.UpdatedAt.UTC(), summary
	return h, err
}

// Head implements store.Store.
func (s *Store) Head(ctx context.Context, id string) (store.Head, error) {
	h, err := scanHead(s.pool.QueryRow(ctx, `SELECT id, agent, status, seq, created_at, updated_at, summary FROM cairn_sessions WHERE id=$1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Head{}, store.ErrNotFound
	}
	if err != nil {
		return store.Head{}, fmt.Errorf("postgres head %s: %w", id, err)
	}
	return h, nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]store.Head, error) {
	limit := any(nil)
	if opts.Limit > 0 {
		limit = opts.Limit
	}
	rows, err := s.pool.Query(ctx, `SELECT id, agent, status, seq, created_at, updated_at, summary FROM cairn_sessions
		WHERE ($1 = '' OR status = $1) ORDER BY updated_at DESC, id LIMIT $2`, opts.Status, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres list: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Head, error) { return scanHead(row) })
	if err != nil {
		return nil, fmt.Errorf("postgres list: %w", err)
	}
	return out, nil
}

// LatestSnapshot implements store.Store.
func (s *Store) LatestSnapshot(ctx context.Context, id string) (int64, []byte, error) {
	var seq int64
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT seq, data FROM cairn_snapshots WHERE session_id=$1`, id).Scan(&seq, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, store.ErrNotFound
	}
	if err != nil {
		return 0, nil, fmt.Errorf("postgres snapshot %s: %w", id, err)
	}
	return seq, data, nil
}

// Secret implements store.Store.
func (s *Store) Secret(ctx context.Context, name string, value []byte) ([]byte, error) {
	var v []byte
	err := s.pool.QueryRow(ctx, `WITH ins AS (INSERT INTO cairn_secrets(name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING value)
		SELECT value FROM ins UNION ALL SELECT value FROM cairn_secrets WHERE name=$1 LIMIT 1`, name, value).Scan(&v)
	if err != nil {
		return nil, fmt.Errorf("postgres secret %s: %w", name, err)
	}
	return v, nil
}

// MarkUsed implements store.Store.
func (s *Store) MarkUsed(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `INSERT INTO cairn_used_tokens(id, used_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`, id, time.Now().UTC())
	if err != nil {
		return fmt.Errorf("postgres mark used: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrConflict
	}
	return nil
}
