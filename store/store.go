// Package store defines where sessions live: an append-only event log per
// session with optimistic concurrency, plus a small head row per session
// (status, seq, a JSON summary) that makes listing and the approval inbox
// cheap. Backends: Memory (this package) and store/sqlite.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrConflict is returned by Append when the session's seq is not the
// expected one (someone else appended first) or when creating a session that
// exists. Nothing was written.
var ErrConflict = errors.New("store: conflict: the session changed since it was read")

// ErrNotFound is returned for an unknown session.
var ErrNotFound = errors.New("store: session not found")

// Event is one immutable entry of a session's log. Data is the type's JSON
// payload; docs/http-api.md lists the types.
type Event struct {
	Seq   int64           `json:"seq"`
	Type  string          `json:"type"`
	Time  time.Time       `json:"time"`
	Frame string          `json:"frame,omitempty"`
	Agent string          `json:"agent,omitempty"`
	Data  json.RawMessage `json:"data"`
}

// Head is the per-session row kept next to the log and replaced on every append.
type Head struct {
	ID        string
	Agent     string
	Status    string
	Seq       int64
	CreatedAt time.Time
	UpdatedAt time.Time
	// Summary is the session as clients see it (JSON), so listings need no
	// replay. On Append, nil keeps the previous summary (the first Append
	// must set it); the other fields are always replaced.
	Summary json.RawMessage
	// Snapshot, when set on Append, is stored (in the same commit) as the
	// session's state as of Seq, replacing any older one. Reads leave it nil.
	Snapshot []byte
}

// ListOptions filters List.
type ListOptions struct {
	Status string // empty: any
	Limit  int    // 0: no limit
}

// Store persists sessions. Implementations must be safe for concurrent use.
type Store interface {
	// Append atomically adds events to a session's log and replaces its head,
	// if and only if the session's current seq is expectedSeq (0 creates the
	// session). Otherwise it returns ErrConflict and writes nothing. One Append
	// is one durable commit.
	Append(ctx context.Context, head Head, expectedSeq int64, events []Event) error
	// Events returns the session's events with seq > after, in order.
	Events(ctx context.Context, id string, after int64) ([]Event, error)
	// Head returns the session's head.
	Head(ctx context.Context, id string) (Head, error)
	// List returns heads, most recently updated first.
	List(ctx context.Context, opts ListOptions) ([]Head, error)
	// LatestSnapshot returns the last snapshot stored with Append and the
	// seq it is as of; ErrNotFound when there is none.
	LatestSnapshot(ctx context.Context, id string) (seq int64, data []byte, err error)
	// Secret returns the value stored under name, storing value first if
	// there is none (the first writer wins; everyone gets the same value).
	Secret(ctx context.Context, name string, value []byte) ([]byte, error)
	// MarkUsed records id as used, once: a second call with the same id
	// returns ErrConflict. It guards one-time tokens against replay.
	MarkUsed(ctx context.Context, id string) error
	// Close releases the store's resources.
	Close() error
}
