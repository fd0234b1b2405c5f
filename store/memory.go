package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn/session"
)

// Memory is an in-process Store, for tests and throwaway sessions. The zero
// value is ready to use.
type Memory struct {
	mu       sync.RWMutex
	sessions map[string]*memSession
	secrets  map[string][]byte
	used     map[string][]byte // token id → outcome (nil while being spent)
	outbox   []*memMessage     // in the order written
	blobs    map[string][]byte
	// tombstones are what purges left, by session id.
	tombstones map[string]Tombstone
	// rules are the standing rules, in the order granted.
	rules []*session.Rule
	// decisions are the decision records, in the order written.
	decisions []DecisionRecord
	feed      Feed
}

type memMessage struct {
	Message
	due     time.Time // zero: given up
	owner   string
	until   time.Time // the claim runs out
	lastErr string
	given   bool
}

type memSession struct {
	head   memHead
	events eventLog
	snaps  *memSnapshots // nil until a snapshot is written
	cp     *session.Checkpoint
}

// memSnapshots are a session's latest snapshot and the keys of the blobs
// its snapshots wrote: most sessions have none.
type memSnapshots struct {
	snap    []byte
	snapSeq int64
	blobs   []string
}

// memHead is what the store keeps of a session's Head: the fields it
// answers with. The rest of an Append's head is kept apart (snapshot,
// blobs, checkpoint, outbox) or is about the Append (Quiet), and who
// asked for a cancel only while one is asked: a completed session, which
// lives until a purge, keeps about 250 bytes here instead of 450.
type memHead struct {
	ID, Agent, Owner, Tenant string
	Status                   session.Status
	Seq                      int64
	CreatedAt, UpdatedAt     time.Time
	NextExpiry               time.Time
	Summary                  json.RawMessage
	PendingKinds             Kinds
	Lease                    Lease
	cancelBy                 *session.Actor // non-nil: a cancel is asked
}

// memHeadOf keeps what h says of the session; who asked for a cancel is
// the store's own (RequestCancel), never an Append's, so cancelBy is
// given apart.
func memHeadOf(h Head, cancelBy *session.Actor) memHead {
	return memHead{ID: h.ID, Agent: h.Agent, Owner: h.Owner, Tenant: h.Tenant, Status: h.Status, Seq: h.Seq, CreatedAt: h.CreatedAt,
		UpdatedAt: h.UpdatedAt, NextExpiry: h.NextExpiry, Summary: h.Summary, PendingKinds: h.PendingKinds, Lease: h.Lease, cancelBy: cancelBy}
}

// head is the Head the store answers with.
func (m *memHead) head() Head {
	h := Head{ID: m.ID, Agent: m.Agent, Owner: m.Owner, Tenant: m.Tenant, Status: m.Status, Seq: m.Seq, CreatedAt: m.CreatedAt,
		UpdatedAt: m.UpdatedAt, NextExpiry: m.NextExpiry, Summary: m.Summary, PendingKinds: m.PendingKinds, Lease: m.Lease}
	if m.cancelBy != nil {
		h.CancelRequested, h.CancelBy = true, *m.cancelBy
	}
	return h
}

var (
	_ Outbox    = (*Memory)(nil)
	_ Blobs     = (*Memory)(nil)
	_ Rules     = (*Memory)(nil)
	_ Decisions = (*Memory)(nil)
)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{} }

// Append implements Store.
func (m *Memory) Append(ctx context.Context, head Head, expectedSeq int64, events []session.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions == nil {
		m.sessions = make(map[string]*memSession)
	}
	s := m.sessions[head.ID]
	switch {
	case s == nil && expectedSeq != 0:
		return ErrNotFound
	case s == nil:
		s = &memSession{}
		m.sessions[head.ID] = s
	case s.head.Seq != expectedSeq, s.head.Lease.HeldBy(head.Lease.Owner, head.UpdatedAt):
		return ErrConflict
	default:
		head.Owner, head.Tenant = s.head.Owner, s.head.Tenant // set once, by the first Append
	}
	s.events.append(events, head.Chained)
	if (head.Snapshot != nil || len(head.Blobs) > 0) && s.snaps == nil {
		s.snaps = &memSnapshots{}
	}
	if head.Snapshot != nil {
		s.snaps.snap, s.snaps.snapSeq = slices.Clone(head.Snapshot), head.Seq
	}
	for _, b := range head.Blobs {
		m.putBlob(b.Key, b.Data)
		s.snaps.blobs = append(s.snaps.blobs, b.Key)
	}
	for _, msg := range head.Outbox {
		if !slices.ContainsFunc(m.outbox, func(o *memMessage) bool { return o.ID == msg.ID }) {
			msg.Body = slices.Clone(msg.Body)
			m.outbox = append(m.outbox, &memMessage{Message: msg, due: msg.CreatedAt})
		}
	}
	if head.Checkpoint != nil {
		cp := *head.Checkpoint
		s.cp = &cp
	}
	m.putRules(head.Rules, head.RuleUses)
	m.putDecisions(head.Decisions)
	if head.Summary == nil {
		head.Summary, head.PendingKinds = s.head.Summary, s.head.PendingKinds
	}
	if head.Quiet && expectedSeq != 0 {
		head.Status, head.UpdatedAt, head.NextExpiry = s.head.Status, s.head.UpdatedAt, s.head.NextExpiry
	}
	cancelBy := s.head.cancelBy
	if head.Status != "running" {
		cancelBy = nil
	}
	s.head = memHeadOf(head, cancelBy)
	m.feed.Publish(Change{SessionID: head.ID, Seq: head.Seq, CancelRequested: cancelBy != nil})
	return nil
}

// RenewLease implements Store.
func (m *Memory) RenewLease(ctx context.Context, id string, lease Lease) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil {
		return false, ErrNotFound
	}
	if s.head.Status != "running" || s.head.Lease.Owner != lease.Owner {
		return false, ErrConflict
	}
	s.head.Lease.Until = lease.Until
	return s.head.cancelBy != nil, nil
}

// RequestCancel implements Store.
func (m *Memory) RequestCancel(ctx context.Context, id string, by session.Actor) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil {
		return ErrNotFound
	}
	if s.head.Status != "running" {
		return ErrConflict
	}
	s.head.cancelBy = &by
	m.feed.Publish(Change{SessionID: id, Seq: s.head.Seq, CancelRequested: true})
	return nil
}

// Watch implements Store.
func (m *Memory) Watch(ctx context.Context) (<-chan Change, error) {
	return m.feed.Watch(ctx), nil
}

// WatchSome implements SelectiveWatcher.
func (m *Memory) WatchSome(ctx context.Context, want func(Change) bool) (<-chan Change, error) {
	return m.feed.WatchSome(ctx, want), nil
}

// Events implements Store.
func (m *Memory) Events(ctx context.Context, id string, after int64) ([]session.Event, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := m.sessions[id]
	if s == nil {
		return nil, ErrNotFound
	}
	return s.events.after(id, after), nil
}

// Head implements Store.
func (m *Memory) Head(ctx context.Context, id string) (Head, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := m.sessions[id]
	if s == nil {
		return Head{}, ErrNotFound
	}
	return s.head.head(), nil
}

// List implements Store.
func (m *Memory) List(ctx context.Context, opts ListOptions) ([]Head, error) {
	kind, err := opts.KindFilter()
	if err != nil {
		return nil, err
	}
	m.mu.RLock()
	var out []Head
	for _, s := range m.sessions {
		if opts.Status != "" && s.head.Status != opts.Status || opts.Agent != "" && s.head.Agent != opts.Agent || opts.Owner != "" && s.head.Owner != opts.Owner ||
			opts.ByTenant && s.head.Tenant != opts.Tenant {
			continue
		}
		if kind != 0 && (s.head.Status != session.StatusPaused || s.head.PendingKinds&kind == 0) {
			continue
		}
		if !opts.LeaseExpiredAt.IsZero() && (s.head.Status != "running" || s.head.Lease.HeldBy("", opts.LeaseExpiredAt)) {
			continue
		}
		if !opts.ExpiredAt.IsZero() && (s.head.Status != "paused" || s.head.NextExpiry.IsZero() || s.head.NextExpiry.After(opts.ExpiredAt)) {
			continue
		}
		if opts.After != (Position{}) && !opts.After.Before(Position{UpdatedAt: s.head.UpdatedAt, ID: s.head.ID}) {
			continue
		}
		out = append(out, s.head.head())
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b Head) int { return a.Position().Compare(b.Position()) })
	if opts.Limit > 0 && len(out) > opts.Limit {
		out = out[:opts.Limit]
	}
	return out, nil
}

// LatestSnapshot implements Store.
func (m *Memory) LatestSnapshot(ctx context.Context, id string) (int64, []byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := m.sessions[id]
	if s == nil || s.snaps == nil || s.snaps.snap == nil {
		return 0, nil, ErrNotFound
	}
	return s.snaps.snapSeq, slices.Clone(s.snaps.snap), nil
}

// Secret implements Store.
func (m *Memory) Secret(ctx context.Context, name string, value []byte) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.secrets[name]; ok {
		return slices.Clone(v), nil
	}
	if m.secrets == nil {
		m.secrets = map[string][]byte{}
	}
	m.secrets[name] = slices.Clone(value)
	return slices.Clone(value), nil
}

// MarkUsed implements Ledger.
func (m *Memory) MarkUsed(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.used[id]; ok {
		return ErrConflict
	}
	if m.used == nil {
		m.used = map[string][]byte{}
	}
	m.used[id] = nil
	return nil
}

// SetOutcome implements Ledger.
func (m *Memory) SetOutcome(ctx context.Context, id string, outcome []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.used[id]; !ok {
		return fmt.Errorf("memory set outcome %s: %w", id, ErrNotFound)
	}
	m.used[id] = slices.Clone(outcome)
	return nil
}

// Outcome implements Ledger.
func (m *Memory) Outcome(ctx context.Context, id string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out, ok := m.used[id]
	if !ok {
		return nil, ErrNotFound
	}
	return slices.Clone(out), nil
}

// Close implements Store.
func (m *Memory) Close() error { return nil }

// ClaimMessages implements Outbox.
func (m *Memory) ClaimMessages(ctx context.Context, owner string, now, until time.Time, limit int) ([]Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Message
	for _, o := range m.outbox {
		if len(out) == limit {
			break
		}
		if o.given || o.due.After(now) || o.until.After(now) {
			continue
		}
		o.owner, o.until = owner, until
		o.Attempts++
		msg := o.Message
		msg.Body = slices.Clone(o.Body)
		out = append(out, msg)
	}
	return out, nil
}

// AckMessage implements Outbox.
func (m *Memory) AckMessage(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.outbox = slices.DeleteFunc(m.outbox, func(o *memMessage) bool { return o.ID == id })
	return nil
}

// RetryMessage implements Outbox.
func (m *Memory) RetryMessage(ctx context.Context, id, owner string, at time.Time, why string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := slices.IndexFunc(m.outbox, func(o *memMessage) bool { return o.ID == id })
	if i < 0 {
		return ErrNotFound
	}
	o := m.outbox[i]
	if o.owner != owner {
		return ErrConflict
	}
	o.owner, o.until, o.lastErr = "", time.Time{}, why
	o.due, o.given = at, at.IsZero()
	return nil
}

// PutBlob implements Blobs.
func (m *Memory) PutBlob(ctx context.Context, key string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.putBlob(key, data)
	return nil
}

func (m *Memory) putBlob(key string, data []byte) {
	if m.blobs == nil {
		m.blobs = map[string][]byte{}
	}
	if _, ok := m.blobs[key]; !ok {
		m.blobs[key] = slices.Clone(data)
	}
}

// GetBlobs implements Blobs.
func (m *Memory) GetBlobs(ctx context.Context, keys []string) ([][]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([][]byte, len(keys))
	for i, key := range keys {
		b, ok := m.blobs[key]
		if !ok {
			return nil, fmt.Errorf("blob %s: %w", key, ErrNotFound)
		}
		out[i] = slices.Clone(b)
	}
	return out, nil
}

// Purge implements Purger.
func (m *Memory) Purge(ctx context.Context, opts PurgeOptions) ([]Head, error) {
	if err := opts.Check(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var due []Head
	for _, s := range m.sessions {
		if s.head.Status == opts.Status && s.head.UpdatedAt.Before(opts.Before) {
			due = append(due, s.head.head())
		}
	}
	slices.SortFunc(due, func(a, b Head) int { return b.Position().Compare(a.Position()) })
	if len(due) > opts.BatchSize() {
		due = due[:opts.BatchSize()]
	}
	var keys []string
	at := opts.PurgedAt()
	if m.tombstones == nil && len(due) > 0 {
		m.tombstones = map[string]Tombstone{}
	}
	for i, h := range due {
		if snaps := m.sessions[h.ID].snaps; snaps != nil {
			keys = append(keys, snaps.blobs...)
		}
		m.tombstones[h.ID] = Tombstone{ID: h.ID, Nonce: NonceOf(h.Summary), Seq: h.Seq, PurgedAt: at, Checkpoint: m.sessions[h.ID].cp}
		delete(m.sessions, h.ID)
		due[i] = Head{ID: h.ID, Status: h.Status, UpdatedAt: h.UpdatedAt}
	}
	if len(keys) > 0 {
		kept := map[string]bool{} // the blobs the remaining sessions refer to
		for _, s := range m.sessions {
			if s.snaps != nil {
				for _, k := range s.snaps.blobs {
					kept[k] = true
				}
			}
		}
		for _, key := range keys {
			if !kept[key] {
				delete(m.blobs, key)
			}
		}
	}
	m.outbox = slices.DeleteFunc(m.outbox, func(o *memMessage) bool { return o.given && o.CreatedAt.Before(opts.Before) })
	maps.DeleteFunc(m.tombstones, func(_ string, t Tombstone) bool { return t.PurgedAt.Before(opts.TombstonesBefore) })
	return due, nil
}

// Tombstones implements Purger.
func (m *Memory) Tombstones(ctx context.Context, after string, limit int) ([]Tombstone, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []Tombstone
	for id, t := range m.tombstones {
		if id > after {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b Tombstone) int { return strings.Compare(a.ID, b.ID) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Checkpoint implements Checkpoints.
func (m *Memory) Checkpoint(ctx context.Context, id string) (session.Checkpoint, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if s := m.sessions[id]; s != nil && s.cp != nil {
		return *s.cp, nil
	}
	return session.Checkpoint{}, fmt.Errorf("checkpoint of %s: %w", id, ErrNotFound)
}

// Tombstone implements Purger.
func (m *Memory) Tombstone(ctx context.Context, id string) (Tombstone, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t, ok := m.tombstones[id]
	if !ok {
		return Tombstone{}, fmt.Errorf("tombstone of %s: %w", id, ErrNotFound)
	}
	return t, nil
}

// putRules stores granted rules and counts uses, under m.mu.
func (m *Memory) putRules(granted []session.Rule, uses []string) {
	for _, r := range granted {
		if m.rule(r.ID) == nil {
			r.GrantedBy.Groups = slices.Clone(r.GrantedBy.Groups)
			m.rules = append(m.rules, &r)
		}
	}
	for _, id := range uses {
		if r := m.rule(id); r != nil {
			r.Uses++
		}
	}
}

func (m *Memory) rule(id string) *session.Rule {
	for _, r := range m.rules {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// Rules implements Rules.
func (m *Memory) Rules(ctx context.Context, q RuleQuery) ([]session.Rule, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []session.Rule
	for _, r := range m.rules {
		if q.Selects(r) && len(out) < q.Max() {
			out = append(out, *r)
		}
	}
	return out, nil
}

// Rule implements Rules.
func (m *Memory) Rule(ctx context.Context, id string) (session.Rule, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if r := m.rule(id); r != nil {
		return *r, nil
	}
	return session.Rule{}, fmt.Errorf("rule %s: %w", id, ErrNotFound)
}

// RevokeRule implements Rules.
func (m *Memory) RevokeRule(ctx context.Context, id string, by session.Actor, at time.Time) (session.Rule, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rule(id)
	if r == nil {
		return session.Rule{}, fmt.Errorf("rule %s: %w", id, ErrNotFound)
	}
	if r.RevokedAt == nil {
		at := at.UTC()
		r.RevokedAt, r.RevokedBy = &at, &by
	}
	return *r, nil
}

// putDecisions stores decision records, under m.mu.
func (m *Memory) putDecisions(records []DecisionRecord) {
	for _, r := range records {
		r.Detail = slices.Clone(r.Detail)
		m.decisions = append(m.decisions, r)
	}
}

// Decisions implements Decisions.
func (m *Memory) Decisions(ctx context.Context, q DecisionQuery, each func(*DecisionRecord) bool) error {
	m.mu.RLock()
	var out []DecisionRecord
	for i := range m.decisions {
		if q.Selects(&m.decisions[i]) {
			out = append(out, m.decisions[i])
		}
	}
	m.mu.RUnlock()
	slices.SortStableFunc(out, func(a, b DecisionRecord) int { return a.DecidedAt.Compare(b.DecidedAt) })
	for i := range out {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !each(&out[i]) {
			break
		}
	}
	return nil
}

// LatestDecisions implements Decisions.
func (m *Memory) LatestDecisions(ctx context.Context, key DecisionKey, limit int) ([]DecisionRecord, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []DecisionRecord
	for _, r := range slices.Backward(m.decisions) {
		if r.Tenant == key.Tenant && r.Agent == key.Agent && r.Tool == key.Tool && r.Shape == key.Shape {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b DecisionRecord) int { return b.DecidedAt.Compare(a.DecidedAt) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
