// Package store defines where sessions live: an append-only event log per
// session with optimistic concurrency, plus a small head row per session
// (status, seq, a JSON summary) that makes listing and the approval inbox
// cheap. Backends: Memory (this package) and store/sqlite.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn/session"
)

// ErrConflict is returned by Append when the session's seq is not the
// expected one (someone else appended first) or when creating a session that
// exists. Nothing was written.
var ErrConflict = errors.New("store: conflict: the session changed since it was read")

// ErrNotFound is returned for an unknown session.
var ErrNotFound = errors.New("store: session not found")

// Head is the per-session row kept next to the log and replaced on every append.
type Head struct {
	ID    string
	Agent string
	// Owner is who started the session (the auth token's name), if known:
	// stored by the first Append, which lists by owner read from an index.
	Owner string
	// Tenant is the session's tenant (session.Session.Tenant): stored by
	// the first Append, which lists by tenant read from an index.
	Tenant    string
	Status    session.Status
	Seq       int64
	CreatedAt time.Time
	UpdatedAt time.Time
	// Summary is the session as clients see it (JSON), so listings need no
	// replay. On Append, nil keeps the previous summary (the first Append
	// must set it); the other fields are always replaced, but for
	// PendingKinds.
	Summary json.RawMessage
	// PendingKinds are the kinds of the interrupts Summary lists (a paused
	// session's pending ones; never empty for a paused session, always
	// empty otherwise), stored with it: on Append, a nil Summary keeps
	// them. Stores index paused sessions by kind, so the inbox filtered by
	// kind (ListOptions.Kind) is an index walk.
	PendingKinds Kinds
	// Snapshot, when set on Append, is stored (in the same commit) as the
	// session's state as of Seq, replacing any older one. Reads leave it nil.
	Snapshot []byte
	// Blobs, when set on Append, are put in the store's blobs (see Blobs)
	// in the same commit: the content-addressed parts a snapshot names (its
	// sealed runs of messages), so a snapshot is never stored without them.
	// A key already there keeps its value. Reads leave it nil.
	Blobs []Blob
	// Lease is the process that appends (Owner, always set by a runner) and
	// how long it keeps the session: Until in the future while its turn
	// runs, Until at or before UpdatedAt to release it. Append stores it as given.
	Lease Lease
	// CancelRequested is set by RequestCancel while the session runs; reads
	// report it, Append keeps it while the status stays running and clears
	// it otherwise.
	CancelRequested bool
	// CancelBy is who asked for the cancel (RequestCancel) while
	// CancelRequested is set; the owner records it in the cancellation.
	CancelBy session.Actor
	// NextExpiry is when the first pending approval of a paused session
	// expires (zero: none). Stores index it, so finding the sessions due for
	// expiry does not read every paused one.
	NextExpiry time.Time
	// Outbox, when set on Append, is put in the store's outbox in the same
	// commit as the events (see Outbox): a message is there if and only if
	// the events it announces are. Reads leave it nil.
	Outbox []Message
	// Checkpoint, when set on Append, replaces the session's last signed
	// checkpoint in the same commit; nil keeps it. Reads leave it nil:
	// Checkpoints reads it, and a purge keeps it in the tombstone.
	Checkpoint *session.Checkpoint
	// Quiet, on an Append to an existing session, says the events change
	// nothing a listing orders by, filters by or shows (engine.ListingKept:
	// a running turn's tool steps): Append keeps the stored Status,
	// Summary, PendingKinds, NextExpiry and UpdatedAt (the listings'
	// order) and writes Seq, Lease and Checkpoint, so the commit rewrites
	// no listing index. UpdatedAt is still the time the lease is checked
	// at. Reads leave it false.
	Quiet bool
	// Rules, when set on Append, are the standing rules the events grant
	// (session.DecisionMade.Granted), put in the store's rules (see Rules)
	// in the same commit: a rule is there if and only if the decision that
	// granted it is. A rule id already stored keeps what it has.
	Rules []session.Rule
	// RuleUses, when set on Append, are the ids of the standing rules that
	// decided calls in the events, one per decision: each adds one to its
	// rule's Uses in the same commit. Reads leave it nil.
	RuleUses []string
	// Decisions, when set on Append, are the records of the approvals the
	// events decide (see Decisions), stored in the same commit. Reads
	// leave it nil.
	Decisions []DecisionRecord
	// Chained: the events' hashes are the engine's chain — each event's
	// Hash is session.EventHash(ID, the event, the Hash of the event
	// before it), the first's from its Prev — so a store may keep the hash
	// before them and derive theirs when it reads them, as the in-memory
	// store does. False: every hash is kept as given.
	Chained bool
}

// Position is a place in List's order (most recently updated first, ties
// by id, greatest first: both descending, the order an index on
// (updated_at, id) walks backwards): a page goes on after the last head of
// the previous one.
type Position struct {
	UpdatedAt time.Time
	ID        string
}

// Position returns the head's place in List's order.
func (h Head) Position() Position { return Position{UpdatedAt: h.UpdatedAt, ID: h.ID} }

// Before reports whether a comes before b in List's order.
func (a Position) Before(b Position) bool { return a.Compare(b) < 0 }

// Compare is -1 when a comes before b in List's order, 1 after, 0 equal:
// what slices.SortFunc takes to sort heads as List does.
func (a Position) Compare(b Position) int {
	if c := a.UpdatedAt.Compare(b.UpdatedAt); c != 0 {
		return -c
	}
	return -strings.Compare(a.ID, b.ID)
}

// Lease is a process's claim on a running session: only its Owner appends
// to the session until the lease expires (see Store.Append).
type Lease struct {
	Owner string
	// Until is when the claim ends unless renewed; at or before the
	// head's UpdatedAt once the owner released it.
	Until time.Time
}

// HeldBy reports whether the lease is held by someone other than owner at now.
func (l Lease) HeldBy(owner string, now time.Time) bool {
	return l.Owner != "" && l.Owner != owner && now.Before(l.Until)
}

// ListOptions filters List.
type ListOptions struct {
	Status session.Status // empty: any
	Agent  string         // empty: any
	Owner  string         // empty: any
	// ByTenant keeps only the sessions of Tenant ("" is the default
	// tenant): every listing a person asks for is of their tenant. A named
	// tenant's is an index walk of the per-tenant indexes, which hold only
	// the sessions of named tenants (NamedTenant), so a server without
	// tenants pays nothing for them; the default tenant's walks the
	// indexes of every session, skipping those of named tenants (none,
	// where no tenants are configured).
	ByTenant bool
	Tenant   string
	Limit    int // 0: no limit
	// LeaseExpiredAt, when set, keeps only running sessions whose lease is
	// released or expired at that time: the ones a process may take over.
	LeaseExpiredAt time.Time
	// ExpiredAt, when set, keeps only paused sessions whose NextExpiry is
	// at or before it: the ones with an approval past its deadline.
	ExpiredAt time.Time
	// Kind, when set, keeps only paused sessions with a pending interrupt
	// of that kind (PendingKinds); a kind Kinds does not know is an error.
	Kind session.Kind
	// After, when set, starts the listing after that position.
	After Position
}

// NamedTenant is the SQL condition of the per-tenant indexes' rows (a
// partial index each): sessions of a named tenant. A listing in a named
// tenant repeats it word for word, which is how SQLite and PostgreSQL know
// they may use those indexes.
const NamedTenant = "tenant != ''"

// Owned is the SQL condition of the owner index's rows (a partial index):
// sessions with an owner. A listing by owner repeats it word for word, as
// with NamedTenant; sessions nobody owns (created without a person's
// token) write no entry.
const Owned = "owner != ''"

// Led reports whether the listing filters on a column an order index
// leads with (status, agent, owner, a named tenant or a kind; the lease and
// expiry scans name a status). A listing that is not (every session, or
// the default tenant's) has no index of its own in SQLite, which merges
// one walk of the status index per status (session.AllStatuses), so that
// no commit writes an index for it.
func (o ListOptions) Led() bool {
	return o.Status != "" || o.Agent != "" || o.Owner != "" || o.Kind != "" ||
		(o.ByTenant && o.Tenant != "") || !o.LeaseExpiredAt.IsZero() || !o.ExpiredAt.IsZero()
}

// Change says that a session's head changed: events up to Seq were
// committed, or a cancel was requested. A Change with an empty SessionID
// means that changes may have been missed (the feed reconnected or fell
// behind): re-read whatever you follow.
type Change struct {
	SessionID       string
	Seq             int64
	CancelRequested bool
}

// Store persists sessions. Implementations must be safe for concurrent use.
type Store interface {
	// Append atomically adds events to a session's log and replaces its head,
	// if and only if the session's current seq is expectedSeq (0 creates the
	// session) and no other process holds its lease: the stored lease is
	// released, owned by head.Lease.Owner, or expired at head.UpdatedAt.
	// Otherwise it returns ErrConflict and writes nothing. One Append is one
	// durable commit. Append must not keep events (the slice) after it
	// returns: the runtime reuses its memory for the next step.
	Append(ctx context.Context, head Head, expectedSeq int64, events []session.Event) error
	// RenewLease extends the lease of a running session that lease.Owner
	// holds to lease.Until, and reports whether a cancel was requested.
	// ErrConflict: the lease was taken over (or the turn ended); the caller
	// must stop, since its next Append would fail.
	RenewLease(ctx context.Context, id string, lease Lease) (cancelRequested bool, err error)
	// RequestCancel asks the owner of a running session to cancel its turn
	// at its next step, on behalf of by (reported as Head.CancelBy).
	// ErrConflict when the session is not running.
	RequestCancel(ctx context.Context, id string, by session.Actor) error
	// Watch delivers the changes committed by every process sharing the
	// store, in commit order per session, until ctx ends. Consumers read the
	// events they lack with Events; see Change for the resync signal.
	Watch(ctx context.Context) (<-chan Change, error)
	// Events returns the session's events with seq > after, in order.
	Events(ctx context.Context, id string, after int64) ([]session.Event, error)
	// Head returns the session's head.
	Head(ctx context.Context, id string) (Head, error)
	// List returns heads, most recently updated first.
	List(ctx context.Context, opts ListOptions) ([]Head, error)
	// LatestSnapshot returns the last snapshot stored with Append and the
	// seq it is as of; ErrNotFound when there is none.
	LatestSnapshot(ctx context.Context, id string) (seq int64, data []byte, err error)
	// Close releases the store's resources.
	Close() error
}

// SelectiveWatcher is a Store whose change feed can drop, in the goroutine
// that publishes, the changes a watcher does not want, so that a watcher
// with nothing to do for most changes (a runner nobody follows) is not
// woken for each commit. want runs under the feed's lock: it must be
// quick, and must not call the store. A resync Change (empty SessionID)
// is always delivered. The memory, SQLite and PostgreSQL stores implement
// it.
type SelectiveWatcher interface {
	WatchSome(ctx context.Context, want func(Change) bool) (<-chan Change, error)
}

// The optional capabilities below serve Cairn's stateless continuation
// tokens only. A runner discovers them with a type assertion on its Store;
// the stores of this module implement both.

// Secrets keeps small values shared by every process on the store (the key
// that signs continuation tokens).
type Secrets interface {
	// Secret returns the value stored under name, storing value first if
	// there is none (the first writer wins; everyone gets the same value).
	Secret(ctx context.Context, name string, value []byte) ([]byte, error)
}

// Ledger records one-time tokens (Cairn's stateless continuation tokens)
// and what spending each one produced. A token is single use across every
// process that shares the ledger. The stores of this module implement it.
type Ledger interface {
	// MarkUsed records id as used, once: a second call with the same id
	// returns ErrConflict. It guards one-time tokens against replay.
	MarkUsed(ctx context.Context, id string) error
	// SetOutcome records what spending id produced (after MarkUsed), so a
	// client that lost the answer can still read it.
	SetOutcome(ctx context.Context, id string, outcome []byte) error
	// Outcome returns what spending id produced: nil while it is being
	// spent (or its spender stopped first); ErrNotFound when id is unused.
	Outcome(ctx context.Context, id string) ([]byte, error)
}

// Message is a notification in a store's outbox (webhook deliveries):
// written by Append in the same commit as the events it announces, then
// claimed, delivered and acknowledged by whichever process gets it first.
type Message struct {
	// ID is unique in the outbox; Append keeps the first message of an id
	// and ignores later ones. It is the delivery id receivers deduplicate by.
	ID string
	// Topic says where the message goes (a webhook endpoint's name).
	Topic string
	// Body is what is delivered.
	Body []byte
	// CreatedAt is when the message was written.
	CreatedAt time.Time
	// Attempts counts the claims so far, this one included (set by ClaimMessages).
	Attempts int
}

// Outbox delivers messages at least once across every process sharing the
// store: a message is claimed by one process at a time, for a while; one
// whose claimant stopped before acknowledging it is claimed again once the
// claim runs out. The stores of this module implement it.
type Outbox interface {
	// ClaimMessages claims up to limit messages due at now (never claimed,
	// claim run out, or retry time reached; not given up) for owner until
	// until, oldest first, counting an attempt for each.
	ClaimMessages(ctx context.Context, owner string, now, until time.Time, limit int) ([]Message, error)
	// AckMessage removes a delivered message.
	AckMessage(ctx context.Context, id string) error
	// RetryMessage releases owner's claim on a message so that it is due
	// again at at, recording why the attempt failed; a zero at gives up on
	// it (it stays in the outbox, never claimed again). ErrConflict: owner
	// no longer holds the claim (it ran out and another process has it).
	RetryMessage(ctx context.Context, id, owner string, at time.Time, why string) error
}

// Durable is implemented by a store whose Append returns only once the
// events are on disk or in another process (SQLite, PostgreSQL). That
// wait is long next to the work of a step, so a runner writes a step
// followed by a model call while the call runs: the call is safe to
// repeat, and its answer is used only once the write succeeded. The
// memory store, whose Append returns at once, does not implement it.
type Durable interface {
	// Durable reports whether Append waits for the events to be durable.
	Durable() bool
}

// Blobs keeps large values by key: the sealed parts of snapshots (written
// with Head.Blobs), and values a driver's messages cannot carry (Temporal's
// 2 MB payloads: the driver stores the value here and passes the key). The
// stores of this module implement it; a runner on a store without it
// writes whole snapshots instead.
type Blobs interface {
	// PutBlob stores data under key; storing a key again keeps the first
	// value (keys are content addresses).
	PutBlob(ctx context.Context, key string, data []byte) error
	// GetBlobs returns the values stored under keys, in the order asked,
	// in one read; ErrNotFound when any is missing.
	GetBlobs(ctx context.Context, keys []string) ([][]byte, error)
}

// OrderBlobs returns found's values in the order of keys, for GetBlobs;
// ErrNotFound names the first key missing.
func OrderBlobs(keys []string, found map[string][]byte) ([][]byte, error) {
	out := make([][]byte, len(keys))
	for i, key := range keys {
		b, ok := found[key]
		if !ok {
			return nil, fmt.Errorf("blob %s: %w", key, ErrNotFound)
		}
		out[i] = b
	}
	return out, nil
}

// Blob is a value stored by its content address (see Head.Blobs).
type Blob struct {
	Key  string
	Data []byte
}

// EncodeActor is how SQL stores keep Head.CancelBy in a text column: the
// actor in JSON, or "" for nobody.
func EncodeActor(a session.Actor) string {
	if a.IsZero() {
		return ""
	}
	b, _ := json.Marshal(a) // strings and a bool: cannot fail
	return string(b)
}

// DecodeActor reads what EncodeActor wrote. A column it cannot read (a
// hand-edited row) gives the zero actor: who cancelled is for the audit
// trail, and no cancel is refused for it.
func DecodeActor(s string) session.Actor {
	var a session.Actor
	if s != "" && json.Unmarshal([]byte(s), &a) != nil {
		return session.Actor{}
	}
	return a
}

// Purger is a store that deletes finished sessions for good: retention
// and `cairn sessions purge`.
type Purger interface {
	// Purge deletes, oldest first, at most opts.Limit sessions whose status
	// is opts.Status and that were last updated before opts.Before, each
	// whole in one commit: its head, events, snapshot and the blobs no
	// other session refers to, leaving its Tombstone (replacing the one
	// an earlier session of the same id left). It returns the heads it
	// deleted (none: the sweep is done). A paused or running status is
	// refused: they are never purged. Outbox messages given up before
	// opts.Before go too, and so do the tombstones of purges before
	// opts.TombstonesBefore. The heads returned hold ID, Status and
	// UpdatedAt only.
	Purge(ctx context.Context, opts PurgeOptions) ([]Head, error)
	// Tombstone returns what the last purge of session id left;
	// ErrNotFound when none is kept.
	Tombstone(ctx context.Context, id string) (Tombstone, error)
	// Tombstones returns up to limit tombstones with ids after after, by
	// id: `cairn audit verify` walks them all, a page at a time.
	Tombstones(ctx context.Context, after string, limit int) ([]Tombstone, error)
}

// Checkpoints reads the sessions' last signed checkpoints (written with
// Head.Checkpoint). The stores of this module implement it.
type Checkpoints interface {
	// Checkpoint returns session id's last signed checkpoint; ErrNotFound
	// when it has none.
	Checkpoint(ctx context.Context, id string) (session.Checkpoint, error)
}

// Tombstone is what a purge leaves of a session, so that a link or a
// callback URL issued for it answers "gone" (and is told apart from one of
// a later session given the same id, which has another nonce).
type Tombstone struct {
	ID    string
	Nonce string // the purged session's nonce (session.Session.Nonce)
	// Seq is the purged session's last seq.
	Seq      int64
	PurgedAt time.Time
	// Checkpoint is the purged session's last signed checkpoint, if it
	// had one: signed at its last turn's end, it says that its log ended
	// at Seq in a given hash, so the tombstone is signed too.
	Checkpoint *session.Checkpoint
}

// PurgeOptions selects the sessions Purge deletes.
type PurgeOptions struct {
	Status session.Status // completed, failed or cancelled
	Before time.Time
	Limit  int // at most this many in one batch; 0: 500
	// Now is when the purge runs, as its tombstones record it; zero:
	// the store's clock.
	Now time.Time
	// TombstonesBefore: the tombstones of purges before it go (zero:
	// none go).
	TombstonesBefore time.Time
}

// PurgedAt is o.Now, or the clock's time.
func (o PurgeOptions) PurgedAt() time.Time {
	if o.Now.IsZero() {
		return time.Now().UTC()
	}
	return o.Now.UTC()
}

// NonceOf reads the nonce from a session's summary (Head.Summary): ""
// when it has none, or cannot be read.
func NonceOf(summary json.RawMessage) string {
	var s struct {
		Nonce string `json:"nonce"`
	}
	_ = json.Unmarshal(summary, &s)
	return s.Nonce
}

// Check refuses a purge of paused or running sessions.
func (o PurgeOptions) Check() error {
	switch o.Status {
	case session.StatusCompleted, session.StatusFailed, session.StatusCancelled:
		return nil
	case session.StatusPaused, session.StatusRunning:
	}
	return fmt.Errorf("purge: status %q: only completed, failed or cancelled sessions are purged", o.Status)
}

// BatchSize is o.Limit, or 500.
func (o PurgeOptions) BatchSize() int {
	if o.Limit > 0 {
		return o.Limit
	}
	return 500
}

// PurgeAll calls p.Purge until nothing is left to delete, calling each (if
// not nil) with every batch, and returns how many sessions went. With a
// share between 0 and 1 it rests after each batch so that batches take
// at most that share of the time (a batch of 20 ms at share 0.1 rests 180
// ms): other writers get the store in between, whatever a batch costs on
// this store and disk. With 0 it does not rest.
func PurgeAll(ctx context.Context, p Purger, opts PurgeOptions, share float64, each func([]Head)) (int, error) {
	n := 0
	for {
		began := time.Now()
		done, err := p.Purge(ctx, opts)
		took := time.Since(began)
		n += len(done)
		if len(done) > 0 && each != nil {
			each(done)
		}
		if err != nil || len(done) == 0 {
			return n, err
		}
		if share > 0 && share < 1 {
			select {
			case <-ctx.Done():
				return n, ctx.Err()
			case <-time.After(time.Duration(float64(took) * (1/share - 1))):
			}
		}
	}
}

// ErrUnreadable is returned for a stored value that cannot be decoded (a
// hand-edited row): callers that check the store report it as such.
var ErrUnreadable = errors.New("store: a stored value cannot be read")

// EncodeCheckpoint is how SQL stores keep a checkpoint in a text column:
// "1 SEQ AT_US KEY HASH SIG" (a version, then its fields, space-separated:
// no field has a space), built without reflection since every pause
// writes one; nil (keep the stored one) for nil.
func EncodeCheckpoint(cp *session.Checkpoint) any {
	if cp == nil {
		return nil
	}
	b := make([]byte, 0, 32+len(cp.Key)+len(cp.Hash)+len(cp.Sig))
	b = append(b, "1 "...)
	b = strconv.AppendInt(b, cp.Seq, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, cp.At.UnixMicro(), 10)
	b = append(append(b, ' '), cp.Key...)
	b = append(append(b, ' '), cp.Hash...)
	b = append(append(b, ' '), cp.Sig...)
	return string(b)
}

// DecodeCheckpoint reads what EncodeCheckpoint wrote: nil for "" (none),
// ErrUnreadable for anything else that is not a checkpoint.
func DecodeCheckpoint(s string) (*session.Checkpoint, error) {
	if s == "" {
		return nil, nil
	}
	f := strings.Split(s, " ")
	if len(f) != 6 || f[0] != "1" {
		return nil, fmt.Errorf("checkpoint %.40q: %w", s, ErrUnreadable)
	}
	seq, err1 := strconv.ParseInt(f[1], 10, 64)
	at, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("checkpoint %.40q: %w", s, ErrUnreadable)
	}
	return &session.Checkpoint{Seq: seq, At: time.UnixMicro(at).UTC(), Key: f[3], Hash: f[4], Sig: f[5]}, nil
}

// Rules keeps standing rules (session.Rule): written with the decision
// that grants them (Head.Rules), read by every process that decides calls,
// revoked at once for all of them. The stores of this module implement it.
type Rules interface {
	// Rules returns the rules q selects, oldest grant first.
	Rules(ctx context.Context, q RuleQuery) ([]session.Rule, error)
	// Rule returns rule id; ErrNotFound when there is none.
	Rule(ctx context.Context, id string) (session.Rule, error)
	// RevokeRule revokes rule id at at, by by, and returns it: from the
	// commit on, no Rules query for live rules returns it. A rule revoked
	// before keeps its first revocation. ErrNotFound when there is none.
	RevokeRule(ctx context.Context, id string, by session.Actor, at time.Time) (session.Rule, error)
}

// RuleQuery selects standing rules.
type RuleQuery struct {
	// Tenant's rules only, unless AllTenants.
	Tenant     string
	AllTenants bool
	// Tools, when set, keeps the rules of those tools.
	Tools []string
	// LiveAt, when set, keeps the rules neither revoked nor expired at
	// that time; zero keeps them all.
	LiveAt time.Time
	// Limit caps the answer; 0: DefaultRuleLimit.
	Limit int
}

// DefaultRuleLimit is RuleQuery's default limit.
const DefaultRuleLimit = 1000

// Max is q.Limit, or DefaultRuleLimit.
func (q RuleQuery) Max() int {
	if q.Limit > 0 {
		return q.Limit
	}
	return DefaultRuleLimit
}

// Selects reports whether q selects r (what every store's query does).
func (q RuleQuery) Selects(r *session.Rule) bool {
	if !q.AllTenants && r.Tenant != q.Tenant {
		return false
	}
	if len(q.Tools) > 0 && !slices.Contains(q.Tools, r.Tool) {
		return false
	}
	return q.LiveAt.IsZero() || r.LiveAt(q.LiveAt)
}

// DecisionRecord is one decision on a call's approval, kept beside the
// sessions' logs for the approval analytics and the earned suggestions:
// written in the commit of the decision (Head.Decisions), so the records
// are exactly the decisions recorded.
type DecisionRecord struct {
	// ID is the session's id and the interrupt's, joined by "/". A record
	// is written once: with its decision's events, which are.
	ID        string
	Tenant    string
	SessionID string
	Agent     string
	Tool      string
	// Shape is the call's argument shape (session.ConditionFor of its
	// arguments): calls of one shape are "the same call".
	Shape  string
	Action session.Action
	// Edited: approved with other arguments; Expired: the outcome at the
	// approval's deadline, decided by no one.
	Edited, Expired bool
	// Rule is the standing rule (or on_expiry rule) that decided it, if any.
	Rule string
	// Approver is who decided (session.Actor.Identity, its issuer and
	// subject joined by a space, as a text column holds it), Name their
	// name.
	Approver, Name string
	// AskedAt is when the approval was asked (zero: never asked, as for a
	// standing rule's decision); DecidedAt when it was decided.
	AskedAt, DecidedAt time.Time
	// Detail, on a rejected or edited call, is what an evaluation set
	// keeps of it (JSON: arguments, new_arguments, reason); nil otherwise.
	Detail json.RawMessage
}

// DecisionQuery selects decision records.
type DecisionQuery struct {
	Tenant     string
	AllTenants bool
	// Since and Until bound DecidedAt: Since ≤ DecidedAt < Until (a zero
	// one does not bound).
	Since, Until time.Time
	// Lean reads only what the analytics count (Agent, Tool, Action,
	// Edited, Expired, Rule, Name, AskedAt, DecidedAt; the rest is left
	// zero): a walk of many records allocates less.
	Lean bool
}

// Selects reports whether q selects r (what every store's query does).
func (q DecisionQuery) Selects(r *DecisionRecord) bool {
	return (q.AllTenants || r.Tenant == q.Tenant) && (q.Since.IsZero() || !r.DecidedAt.Before(q.Since)) &&
		(q.Until.IsZero() || r.DecidedAt.Before(q.Until))
}

// DecisionKey names the calls of one tool of one agent with one argument
// shape, in a tenant.
type DecisionKey struct {
	Tenant, Agent, Tool, Shape string
}

// Decisions keeps decision records (DecisionRecord). The stores of this
// module implement it.
type Decisions interface {
	// Decisions calls each with the records q selects, oldest decision
	// first (an index walk on tenant and time), until each returns false.
	Decisions(ctx context.Context, q DecisionQuery, each func(*DecisionRecord) bool) error
	// LatestDecisions returns the last limit records of key, newest first.
	LatestDecisions(ctx context.Context, key DecisionKey, limit int) ([]DecisionRecord, error)
}
