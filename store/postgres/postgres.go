// Package postgres is a store.Store on PostgreSQL through pgx: one
// transaction per Append, guarded by the session row's seq.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairnhq/cairn/session"
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
ALTER TABLE cairn_sessions ADD COLUMN IF NOT EXISTS lease_owner TEXT NOT NULL DEFAULT '';
ALTER TABLE cairn_sessions ADD COLUMN IF NOT EXISTS lease_until TIMESTAMPTZ;
ALTER TABLE cairn_sessions ADD COLUMN IF NOT EXISTS cancel_requested BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE cairn_used_tokens ADD COLUMN IF NOT EXISTS outcome BYTEA;
ALTER TABLE cairn_sessions ADD COLUMN IF NOT EXISTS next_expiry TIMESTAMPTZ;
ALTER TABLE cairn_sessions ADD COLUMN IF NOT EXISTS cancel_by TEXT NOT NULL DEFAULT '';
-- the tamper-evident chain (session.Event.Hash; events before it: '')
ALTER TABLE cairn_events ADD COLUMN IF NOT EXISTS hash TEXT NOT NULL DEFAULT '';
ALTER TABLE cairn_sessions ADD COLUMN IF NOT EXISTS checkpoint TEXT NOT NULL DEFAULT ''; -- Head.Checkpoint (store.EncodeCheckpoint; '': none)
-- whose it is, for listings by tenant (sessions before it: the default tenant)
ALTER TABLE cairn_sessions ADD COLUMN IF NOT EXISTS tenant TEXT NOT NULL DEFAULT '';
DO $$ BEGIN
	-- who started it, for listings by owner; sessions stored before the
	-- column have it in their summary
	IF NOT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'cairn_sessions' AND column_name = 'owner') THEN
		ALTER TABLE cairn_sessions ADD COLUMN owner TEXT NOT NULL DEFAULT '';
		UPDATE cairn_sessions SET owner = COALESCE(convert_from(summary, 'UTF8')::jsonb->>'owner', '');
	END IF;
END $$;
CREATE INDEX IF NOT EXISTS cairn_sessions_next_expiry ON cairn_sessions(next_expiry) WHERE next_expiry IS NOT NULL;
CREATE TABLE IF NOT EXISTS cairn_outbox (
	id         TEXT PRIMARY KEY,
	topic      TEXT NOT NULL,
	body       BYTEA NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	attempts   INTEGER NOT NULL DEFAULT 0,
	due        TIMESTAMPTZ,                -- NULL once given up
	owner      TEXT NOT NULL DEFAULT '',
	until      TIMESTAMPTZ,                -- the claim runs out
	last_error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS cairn_outbox_due ON cairn_outbox(due) WHERE due IS NOT NULL;
CREATE TABLE IF NOT EXISTS cairn_blobs (key TEXT PRIMARY KEY, data BYTEA NOT NULL);
-- Which session wrote which blob (blobs are shared by content), so a purge
-- deletes a blob only with the last session that refers to it. Blobs
-- stored before the table are kept for good (session '').
DO $$ BEGIN
	IF NOT EXISTS (SELECT 1 FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_name = 'cairn_blob_refs') THEN
		CREATE TABLE cairn_blob_refs (session_id TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (session_id, key));
		INSERT INTO cairn_blob_refs(session_id, key) SELECT '', key FROM cairn_blobs;
	END IF;
END $$;
CREATE INDEX IF NOT EXISTS cairn_blob_refs_key ON cairn_blob_refs(key);
-- The listings walk these indexes in List's order (updated_at DESC, id
-- DESC) from the cursor on: no scan, no sort, at any depth.
-- cairn_sessions_status (status, updated_at DESC), of earlier versions,
-- left ties to a sort.
-- (SQLite merges a walk of the status index per status instead, and has
-- no index of its own for the unfiltered listing; PostgreSQL 15 does not
-- merge the arms of a UNION ALL in order — it appends and sorts them —
-- so it keeps one.)
CREATE INDEX IF NOT EXISTS cairn_sessions_order ON cairn_sessions(updated_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS cairn_sessions_status_order ON cairn_sessions(status, updated_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS cairn_sessions_agent_order ON cairn_sessions(agent, updated_at DESC, id DESC);
-- A person lists within their tenant (ListOptions.ByTenant): a named tenant
-- from the tenant_* indexes, partial on store.NamedTenant (a database
-- without tenants writes none of them); the default tenant, and the
-- runtime and global listings, from the others. A
-- listing by owner is always within the owner's tenant
-- (cairn_sessions_owner_order, of earlier versions, lacked the tenant),
-- and only sessions with an owner are in its index (store.Owned;
-- cairn_sessions_owner_tenant_order, of earlier versions, had them all).
CREATE INDEX IF NOT EXISTS cairn_sessions_tenant_order ON cairn_sessions(tenant, updated_at DESC, id DESC) WHERE ` + store.NamedTenant + `;
CREATE INDEX IF NOT EXISTS cairn_sessions_tenant_status_order ON cairn_sessions(tenant, status, updated_at DESC, id DESC) WHERE ` + store.NamedTenant + `;
CREATE INDEX IF NOT EXISTS cairn_sessions_tenant_agent_order ON cairn_sessions(tenant, agent, updated_at DESC, id DESC) WHERE ` + store.NamedTenant + `;
CREATE INDEX IF NOT EXISTS cairn_sessions_owned_order ON cairn_sessions(owner, tenant, updated_at DESC, id DESC) WHERE ` + store.Owned + `;
DROP INDEX IF EXISTS cairn_sessions_owner_tenant_order;
DROP INDEX IF EXISTS cairn_sessions_owner_order;
DROP INDEX IF EXISTS cairn_sessions_status;
-- What a purge leaves of a session (store.Tombstone): its links and
-- callback URLs answer "gone".
CREATE TABLE IF NOT EXISTS cairn_tombstones (
	session_id TEXT PRIMARY KEY,
	nonce      TEXT NOT NULL,
	seq        BIGINT NOT NULL,
	purged_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS cairn_tombstones_purged_at ON cairn_tombstones(purged_at);
ALTER TABLE cairn_tombstones ADD COLUMN IF NOT EXISTS checkpoint TEXT NOT NULL DEFAULT ''; -- the session's last signed checkpoint
-- Standing rules (session.Rule, in JSON in data; uses and the revocation
-- are columns, changed in place). The processes that decide calls read
-- the live ones of a tenant's tools.
CREATE TABLE IF NOT EXISTS cairn_rules (
	id         TEXT PRIMARY KEY,
	tenant     TEXT NOT NULL,
	tool       TEXT NOT NULL,
	granted_at TIMESTAMPTZ NOT NULL,
	expires_at TIMESTAMPTZ,              -- NULL never
	revoked_at TIMESTAMPTZ,              -- NULL not revoked
	revoked_by TEXT NOT NULL DEFAULT '', -- a session.Actor in JSON
	uses       BIGINT NOT NULL DEFAULT 0,
	data       BYTEA NOT NULL
);
CREATE INDEX IF NOT EXISTS cairn_rules_live ON cairn_rules(tenant, tool) WHERE revoked_at IS NULL;
-- One row per decided approval (store.DecisionRecord), for the analytics
-- (by tenant and time) and the earned suggestions (by call shape).
CREATE TABLE IF NOT EXISTS cairn_decisions (
	id         TEXT PRIMARY KEY,
	tenant     TEXT NOT NULL,
	session_id TEXT NOT NULL,
	agent      TEXT NOT NULL,
	tool       TEXT NOT NULL,
	shape      TEXT NOT NULL,
	action     TEXT NOT NULL,
	edited     BOOLEAN NOT NULL,
	expired    BOOLEAN NOT NULL,
	rule       TEXT NOT NULL,
	approver   TEXT NOT NULL,
	name       TEXT NOT NULL,
	asked_at   TIMESTAMPTZ,       -- NULL never asked
	decided_at TIMESTAMPTZ NOT NULL,
	detail     BYTEA
);
CREATE INDEX IF NOT EXISTS cairn_decisions_time ON cairn_decisions(tenant, decided_at);
CREATE INDEX IF NOT EXISTS cairn_decisions_shape ON cairn_decisions(tenant, agent, tool, shape, decided_at);
`

// kindsSchema adds pending_kinds (the store.Kinds of the summary's
// interrupts) and a partial index per interrupt kind on the paused sessions
// that have one pending: the inbox filtered by kind walks it like the
// other listings. Appends write the column with the summary: a paused
// session's kinds are never 0 (it waits for at least one interrupt),
// anyone else's always are. A process of an older version knows nothing
// of the column (a rolling upgrade), so its writes break that rule; a
// trigger mends exactly those rows, reading the kinds from the summary.
// Paused sessions stored before the column get theirs from their summary.
func kindsSchema() string {
	kindsOf := func(summary string) string {
		return `(SELECT COALESCE(bit_or(` + store.KindBitSQL("i->>'kind'") + `), 0)
			FROM jsonb_array_elements(COALESCE(convert_from(` + summary + `, 'UTF8')::jsonb->'interrupts', '[]')) AS i)`
	}
	var b strings.Builder
	b.WriteString(`DO $$ BEGIN
	IF NOT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'cairn_sessions' AND column_name = 'pending_kinds') THEN
		ALTER TABLE cairn_sessions ADD COLUMN pending_kinds INTEGER NOT NULL DEFAULT 0;
		UPDATE cairn_sessions SET pending_kinds = ` + kindsOf("summary") + ` WHERE status = 'paused';
	END IF;
END $$;
CREATE OR REPLACE FUNCTION cairn_sessions_kinds() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN
	IF NEW.status = 'paused' AND NEW.pending_kinds = 0 THEN
		NEW.pending_kinds := ` + kindsOf("NEW.summary") + `;
	ELSIF NEW.status <> 'paused' AND NEW.pending_kinds <> 0 THEN
		NEW.pending_kinds := 0;
	END IF;
	RETURN NEW;
END $f$;
DO $$ BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'cairn_sessions_kinds' AND tgrelid = 'cairn_sessions'::regclass) THEN
		CREATE TRIGGER cairn_sessions_kinds BEFORE INSERT OR UPDATE OF status, summary ON cairn_sessions
			FOR EACH ROW EXECUTE FUNCTION cairn_sessions_kinds();
	END IF;
END $$;
`)
	for _, k := range store.IndexedKinds() {
		fmt.Fprintf(&b, "CREATE INDEX IF NOT EXISTS cairn_sessions_paused_%s ON cairn_sessions(updated_at DESC, id DESC) WHERE %s;\n", k, store.KindCondition(store.KindBit(k)))
		fmt.Fprintf(&b, "CREATE INDEX IF NOT EXISTS cairn_sessions_tenant_paused_%s ON cairn_sessions(tenant, updated_at DESC, id DESC) WHERE %s AND %s;\n", k, store.KindCondition(store.KindBit(k)), store.NamedTenant)
	}
	return b.String()
}

// eventsQuery reads a session's events after a seq.
const eventsQuery = `SELECT seq, type, time, frame, agent, data, hash FROM cairn_events WHERE session_id=$1 AND seq>$2 ORDER BY seq`

// channel is the LISTEN/NOTIFY channel of committed changes; a payload is
// "SEQ CANCEL ID" (CANCEL is 0 or 1; the id comes last and may hold spaces).
const channel = "cairn_changes"

const headColumns = `id, agent, status, seq, created_at, updated_at, summary, lease_owner, lease_until, cancel_requested, next_expiry, cancel_by, owner, pending_kinds, tenant`

func leaseUntil(l store.Lease) any {
	if l.Owner == "" {
		return nil
	}
	return l.Until
}

// DefaultMaxConns is the connections a Store opens at most, unless the URL
// sets pool_max_conns (PostgreSQL allows 100 by default, for every process).
const DefaultMaxConns = 16

// Store is a store.Store on PostgreSQL.
type Store struct {
	pool       *pgxpool.Pool
	feed       store.Feed
	listenOnce sync.Once
	stop       context.CancelFunc
	stopped    context.Context
	w          *writer
}

var (
	_ store.Store     = (*Store)(nil)
	_ store.Outbox    = (*Store)(nil)
	_ store.Rules     = (*Store)(nil)
	_ store.Decisions = (*Store)(nil)
	_ store.Blobs     = (*Store)(nil)
)

// Open connects to the database at url (postgres://…) and creates the
// tables if needed. It keeps up to DefaultMaxConns connections unless the
// URL says otherwise (pool_max_conns=N).
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		// pgx's default (4 on this kind of machine, one of them held by
		// Watch) caps the commits in flight, and each waits for its WAL
		// flush: concurrent sessions queued for a connection, not for the
		// database. PostgreSQL flushes the WAL of concurrent commits together.
		cfg.MaxConns = DefaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	// Concurrent first opens race on CREATE … IF NOT EXISTS; an advisory
	// lock makes the schema step one at a time.
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7305541)`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, schema+kindsSchema())
		return err
	}); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store: create schema: %w", err)
	}
	st := &Store{pool: pool}
	st.stopped, st.stop = context.WithCancel(context.Background())
	st.w = newWriter(st.stopped, pool)
	return st, nil
}

// Durable is store.Durable: an append returns once it is durable.
func (s *Store) Durable() bool { return true }

// Close closes the pool.
func (s *Store) Close() error {
	s.stop()
	s.w.wg.Wait()
	s.pool.Close()
	return nil
}

// Append implements store.Store.
func (s *Store) Append(ctx context.Context, head store.Head, expectedSeq int64, events []session.Event) error {
	query := appendUpdate
	switch {
	case expectedSeq == 0:
		query = appendCreate
	case head.Quiet:
		query = appendQuiet
	}
	n := len(events)
	seqs, types, times, frames, agents, data := make([]int64, n), make([]string, n), make([]time.Time, n), make([]string, n), make([]string, n), make([][]byte, n)
	hashes := make([]string, n)
	for i, e := range events {
		seqs[i], types[i], times[i], frames[i], agents[i], data[i] = e.Seq, string(e.Type), e.Time, e.Frame, e.Agent, e.Data
		hashes[i] = e.Hash
	}
	var outIDs, outTopics []string
	var outBodies [][]byte
	var outAt []time.Time
	for _, m := range head.Outbox {
		outIDs, outTopics, outBodies, outAt = append(outIDs, m.ID), append(outTopics, m.Topic), append(outBodies, m.Body), append(outAt, m.CreatedAt)
	}
	var blobKeys []string
	var blobData [][]byte
	for _, b := range head.Blobs {
		blobKeys, blobData = append(blobKeys, b.Key), append(blobData, b.Data)
	}
	rules, err := grantedRules(head.Rules)
	if err != nil {
		return fmt.Errorf("postgres append %s: %w", head.ID, err)
	}
	dec := decisionRows(head.Decisions)
	var summary []byte // NULL keeps the stored summary, and its kinds
	var kinds *int32
	if head.Summary != nil {
		k := int32(head.PendingKinds)
		summary, kinds = head.Summary, &k
	}
	var snapshot []byte // NULL: none with this step
	if head.Snapshot != nil {
		snapshot = head.Snapshot
	}
	written, err := s.w.do(ctx, head.ID, query, []any{
		head.ID, head.Agent, head.Status, head.Seq, head.CreatedAt, head.UpdatedAt, summary, head.Lease.Owner, leaseUntil(head.Lease), optionalTime(head.NextExpiry),
		expectedSeq, seqs, types, times, frames, agents, data, outIDs, outTopics, outBodies, outAt, blobKeys, blobData, snapshot,
		channel, fmt.Sprintf("%d 0 %s", head.Seq, head.ID), head.Owner, kinds, head.Tenant, hashes, store.EncodeCheckpoint(head.Checkpoint),
		rules.ids, rules.tenants, rules.tools, rules.granted, rules.expires, rules.data, head.RuleUses,
		dec.ids, dec.tenants, dec.sessions, dec.agents, dec.tools, dec.shapes, dec.actions, dec.edited, dec.expired, dec.rules, dec.approvers, dec.names,
		dec.asked, dec.decided, dec.details})
	var pgErr *pgconn.PgError
	switch {
	case err == nil && written == 1:
		return nil
	case err == nil && expectedSeq == 0:
		return store.ErrConflict
	case err == nil:
		var one int
		if err := s.pool.QueryRow(ctx, `SELECT 1 FROM cairn_sessions WHERE id=$1`, head.ID).Scan(&one); errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		return store.ErrConflict
	case errors.As(err, &pgErr) && pgErr.Code == "23505": // unique violation: a concurrent writer won
		return store.ErrConflict
	}
	return fmt.Errorf("postgres append %s: %w", head.ID, err)
}

// An append is one statement, so one round trip and one implicit
// transaction: the session row is created or moved from expectedSeq ($11)
// under the lease check, and the events, outbox messages, blobs, snapshot
// and the change notification are written only if it was (the data-changing
// WITH clauses all run once, and see the row through s).
const (
	appendCreate = `WITH s AS (
	INSERT INTO cairn_sessions(id, agent, status, seq, created_at, updated_at, summary, lease_owner, lease_until, next_expiry, owner, pending_kinds, tenant, checkpoint)
	SELECT $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$27,COALESCE($28::integer, 0),$29,COALESCE($31::text, '') WHERE $11::bigint = 0
	ON CONFLICT (id) DO NOTHING RETURNING id)` + appendRest
	appendUpdate = `WITH unused AS (SELECT $2::text, $5::timestamptz, $27::text, $29::text), -- the agent, creation time, owner and tenant stay
s AS (
	UPDATE cairn_sessions SET status=$3, seq=$4, updated_at=$6, summary=COALESCE($7, summary), pending_kinds=COALESCE($28::integer, pending_kinds),
		lease_owner=$8, lease_until=$9, cancel_requested=(cancel_requested AND $3='running'), next_expiry=$10, checkpoint=COALESCE($31::text, checkpoint)
	WHERE id=$1 AND seq=$11 AND (lease_owner='' OR lease_owner=$8 OR lease_until IS NULL OR lease_until<=$6)
	RETURNING id)` + appendRest
	// appendQuiet is appendUpdate for a Quiet head: it sets no indexed
	// column (status, updated_at, pending_kinds, next_expiry), so
	// PostgreSQL writes no index entry for it and may update the row in
	// its page (a heap-only tuple).
	appendQuiet = `WITH unused AS (SELECT $2::text, $3::text, $5::timestamptz, $7::bytea, $10::timestamptz, $27::text, $28::integer, $29::text), -- a quiet append keeps the listing's columns (store.Head.Quiet)
s AS (
	UPDATE cairn_sessions SET seq=$4, lease_owner=$8, lease_until=$9, checkpoint=COALESCE($31::text, checkpoint)
	WHERE id=$1 AND seq=$11 AND (lease_owner='' OR lease_owner=$8 OR lease_until IS NULL OR lease_until<=$6)
	RETURNING id)` + appendRest
	appendRest = `,
e AS (INSERT INTO cairn_events(session_id, seq, type, time, frame, agent, data, hash)
	SELECT $1, * FROM unnest($12::bigint[], $13::text[], $14::timestamptz[], $15::text[], $16::text[], $17::bytea[], $30::text[])
	WHERE EXISTS (SELECT 1 FROM s)),
o AS (INSERT INTO cairn_outbox(id, topic, body, created_at, due)
	SELECT m.id, m.topic, m.body, m.at, m.at FROM unnest($18::text[], $19::text[], $20::bytea[], $21::timestamptz[]) AS m(id, topic, body, at)
	WHERE EXISTS (SELECT 1 FROM s) ON CONFLICT (id) DO NOTHING),
b AS (INSERT INTO cairn_blobs(key, data) SELECT * FROM unnest($22::text[], $23::bytea[])
	WHERE EXISTS (SELECT 1 FROM s) ON CONFLICT (key) DO NOTHING),
r AS (INSERT INTO cairn_blob_refs(session_id, key) SELECT $1, k FROM unnest($22::text[]) AS k
	WHERE EXISTS (SELECT 1 FROM s) ON CONFLICT DO NOTHING),
n AS (INSERT INTO cairn_snapshots(session_id, seq, data) SELECT $1, $4, $24::bytea
	WHERE $24::bytea IS NOT NULL AND EXISTS (SELECT 1 FROM s)
	ON CONFLICT (session_id) DO UPDATE SET seq=excluded.seq, data=excluded.data),
g AS (INSERT INTO cairn_rules(id, tenant, tool, granted_at, expires_at, data)
	SELECT * FROM unnest($32::text[], $33::text[], $34::text[], $35::timestamptz[], $36::timestamptz[], $37::bytea[])
	WHERE EXISTS (SELECT 1 FROM s) ON CONFLICT (id) DO NOTHING),
u AS (UPDATE cairn_rules SET uses = uses + c.n FROM (SELECT id, count(*) AS n FROM unnest($38::text[]) AS id GROUP BY id) AS c
	WHERE cairn_rules.id = c.id AND EXISTS (SELECT 1 FROM s)),
d AS (INSERT INTO cairn_decisions(id, tenant, session_id, agent, tool, shape, action, edited, expired, rule, approver, name, asked_at, decided_at, detail)
	SELECT * FROM unnest($39::text[], $40::text[], $41::text[], $42::text[], $43::text[], $44::text[], $45::text[], $46::boolean[], $47::boolean[],
		$48::text[], $49::text[], $50::text[], $51::timestamptz[], $52::timestamptz[], $53::bytea[])
	WHERE EXISTS (SELECT 1 FROM s) ON CONFLICT (id) DO NOTHING)
SELECT count(*)::int FROM (SELECT pg_notify($25, $26) FROM s) AS written`
)

// Events implements store.Store.
func (s *Store) Events(ctx context.Context, id string, after int64) ([]session.Event, error) {
	rows, err := s.pool.Query(ctx, eventsQuery, id, after)
	if err != nil {
		return nil, fmt.Errorf("postgres events %s: %w", id, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (session.Event, error) {
		var e session.Event
		var data []byte
		err := row.Scan(&e.Seq, &e.Type, &e.Time, &e.Frame, &e.Agent, &data, &e.Hash)
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

// optionalTime stores a zero time as NULL.
func optionalTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func scanHead(row pgx.Row) (store.Head, error) {
	var h store.Head
	var summary []byte
	var until, expiry *time.Time
	var cancelBy string
	var kinds int32
	err := row.Scan(&h.ID, &h.Agent, &h.Status, &h.Seq, &h.CreatedAt, &h.UpdatedAt, &summary, &h.Lease.Owner, &until, &h.CancelRequested, &expiry, &cancelBy, &h.Owner, &kinds, &h.Tenant)
	h.PendingKinds = store.Kinds(kinds)
	if h.CancelRequested {
		h.CancelBy = store.DecodeActor(cancelBy)
	}
	h.CreatedAt, h.UpdatedAt, h.Summary = h.CreatedAt.UTC(), h.UpdatedAt.UTC(), summary
	if until != nil {
		h.Lease.Until = until.UTC()
	}
	if expiry != nil {
		h.NextExpiry = expiry.UTC()
	}
	return h, err
}

// RenewLease implements store.Store.
func (s *Store) RenewLease(ctx context.Context, id string, lease store.Lease) (bool, error) {
	var cancel bool
	err := s.pool.QueryRow(ctx, `UPDATE cairn_sessions SET lease_until=$3 WHERE id=$1 AND lease_owner=$2 AND status='running' RETURNING cancel_requested`,
		id, lease.Owner, lease.Until).Scan(&cancel)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := s.Head(ctx, id); err != nil {
			return false, err
		}
		return false, store.ErrConflict
	}
	if err != nil {
		return false, fmt.Errorf("postgres renew lease %s: %w", id, err)
	}
	return cancel, nil
}

// RequestCancel implements store.Store.
func (s *Store) RequestCancel(ctx context.Context, id string, by session.Actor) error {
	var seq int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `UPDATE cairn_sessions SET cancel_requested=true, cancel_by=$2 WHERE id=$1 AND status='running' RETURNING seq`, id, store.EncodeActor(by)).Scan(&seq); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, fmt.Sprintf("%d 1 %s", seq, id))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := s.Head(ctx, id); err != nil {
			return err
		}
		return store.ErrConflict
	}
	if err != nil {
		return fmt.Errorf("postgres request cancel %s: %w", id, err)
	}
	return nil
}

// Watch implements store.Store with LISTEN/NOTIFY on one connection of the
// pool. After a (re)connect it sends a resync Change: whatever was
// committed while no one listened is read back by the consumers.
func (s *Store) Watch(ctx context.Context) (<-chan store.Change, error) {
	s.listenOnce.Do(func() { go s.listen() })
	return s.feed.Watch(ctx), nil
}

// WatchSome implements store.SelectiveWatcher.
func (s *Store) WatchSome(ctx context.Context, want func(store.Change) bool) (<-chan store.Change, error) {
	s.listenOnce.Do(func() { go s.listen() })
	return s.feed.WatchSome(ctx, want), nil
}

func (s *Store) listen() {
	backoff := 100 * time.Millisecond
	for s.stopped.Err() == nil {
		// listenConn returns when the connection fails; why does not
		// matter here: reconnect, then resync (subscribers reload).
		_ = s.listenConn()
		if s.stopped.Err() != nil {
			return
		}
		select {
		case <-s.stopped.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// listenConn listens on one connection until it fails.
func (s *Store) listenConn() error {
	c, err := s.pool.Acquire(s.stopped)
	if err != nil {
		return err
	}
	conn := c.Hijack() // this connection blocks in WaitForNotification: not for the pool
	defer conn.Close(context.Background())
	if _, err := conn.Exec(s.stopped, "LISTEN "+channel); err != nil {
		return err
	}
	s.feed.Publish(store.Change{}) // anything committed before LISTEN: re-read
	for {
		n, err := conn.WaitForNotification(s.stopped)
		if err != nil {
			return err
		}
		if c, ok := parsePayload(n.Payload); ok {
			s.feed.Publish(c)
		}
	}
}

func parsePayload(p string) (store.Change, bool) {
	seqText, rest, ok1 := strings.Cut(p, " ")
	cancel, id, ok2 := strings.Cut(rest, " ")
	seq, err := strconv.ParseInt(seqText, 10, 64)
	if !ok1 || !ok2 || err != nil || id == "" {
		return store.Change{}, false
	}
	return store.Change{SessionID: id, Seq: seq, CancelRequested: cancel == "1"}, true
}

// Head implements store.Store.
func (s *Store) Head(ctx context.Context, id string) (store.Head, error) {
	h, err := scanHead(s.pool.QueryRow(ctx, `SELECT `+headColumns+` FROM cairn_sessions WHERE id=$1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Head{}, store.ErrNotFound
	}
	if err != nil {
		return store.Head{}, fmt.Errorf("postgres head %s: %w", id, err)
	}
	return h, nil
}

// listQuery is List's query, holding only the conditions opts sets: the
// generic plan of an all-purpose query, with conditions such as
// "$1 is empty or status is $1", could use no index.
func listQuery(opts store.ListOptions) (string, []any, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	kind, err := opts.KindFilter()
	if err != nil {
		return "", nil, err
	}
	if kind != 0 {
		where = append(where, store.KindCondition(kind))
		if opts.Status == session.StatusPaused {
			opts.Status = "" // store.KindCondition says it, in the words of the index
		}
	}
	if opts.Status != "" {
		where = append(where, "status = "+arg(string(opts.Status)))
	}
	if opts.Agent != "" {
		where = append(where, "agent = "+arg(opts.Agent))
	}
	if opts.Owner != "" {
		where = append(where, "owner = "+arg(opts.Owner), store.Owned)
	}
	switch {
	case opts.ByTenant && opts.Tenant != "":
		where = append(where, "tenant = "+arg(opts.Tenant), store.NamedTenant)
	case opts.ByTenant:
		where = append(where, "tenant = ''")
	}
	if !opts.LeaseExpiredAt.IsZero() {
		at := arg(opts.LeaseExpiredAt)
		where = append(where, "status = 'running' AND (lease_owner = '' OR lease_until IS NULL OR lease_until <= "+at+")")
	}
	if !opts.ExpiredAt.IsZero() {
		where = append(where, "status = 'paused' AND next_expiry <= "+arg(opts.ExpiredAt))
	}
	if opts.After != (store.Position{}) {
		// A row comparison is a range on the order index.
		where = append(where, "(updated_at, id) < ("+arg(opts.After.UpdatedAt)+", "+arg(opts.After.ID)+")")
	}
	q := `SELECT ` + headColumns + ` FROM cairn_sessions`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY updated_at DESC, id DESC"
	if opts.Limit > 0 {
		q += " LIMIT " + arg(opts.Limit)
	}
	return q, args, nil
}

// ExplainList is the plan of List(opts) as PostgreSQL prints it
// (EXPLAIN), with sequential scans and sorts discouraged
// (enable_seqscan and enable_sort off) as they would be on a large table:
// the planner picks them on a small one, so a plan that still has one has
// no index to walk. What the conformance suite checks.
func (s *Store) ExplainList(ctx context.Context, opts store.ListOptions) (string, error) {
	q, args, err := listQuery(opts)
	if err != nil {
		return "", err
	}
	return s.explain(ctx, q, args...)
}

// ExplainEvents is the plan of Events(id, after), as ExplainList.
func (s *Store) ExplainEvents(ctx context.Context, id string, after int64) (string, error) {
	return s.explain(ctx, eventsQuery, id, after)
}

func (s *Store) explain(ctx context.Context, q string, args ...any) (string, error) {
	var lines []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `EXPLAIN `+q, args...)
		if err != nil {
			return err
		}
		lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return "", fmt.Errorf("postgres explain: %w", err)
	}
	return strings.Join(lines, "\n"), nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]store.Head, error) {
	q, args, err := listQuery(opts)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, q, args...)
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

// ClaimMessages implements store.Outbox. Claimants on other nodes skip the
// rows one is claiming (SKIP LOCKED) instead of waiting for them.
func (s *Store) ClaimMessages(ctx context.Context, owner string, now, until time.Time, limit int) ([]store.Message, error) {
	rows, err := s.pool.Query(ctx, `UPDATE cairn_outbox SET owner=$1, until=$2, attempts=attempts+1
		WHERE id IN (SELECT id FROM cairn_outbox WHERE due <= $3 AND (until IS NULL OR until <= $3)
			ORDER BY due, id LIMIT $4 FOR UPDATE SKIP LOCKED)
		RETURNING id, topic, body, created_at, attempts`, owner, until, now, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres outbox claim: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Message, error) {
		var m store.Message
		err := row.Scan(&m.ID, &m.Topic, &m.Body, &m.CreatedAt, &m.Attempts)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres outbox claim: %w", err)
	}
	slices.SortFunc(out, func(a, b store.Message) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// AckMessage implements store.Outbox.
func (s *Store) AckMessage(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM cairn_outbox WHERE id=$1`, id); err != nil {
		return fmt.Errorf("postgres outbox ack %s: %w", id, err)
	}
	return nil
}

// RetryMessage implements store.Outbox.
func (s *Store) RetryMessage(ctx context.Context, id, owner string, at time.Time, why string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE cairn_outbox SET owner='', until=NULL, due=$1, last_error=$2 WHERE id=$3 AND owner=$4`,
		optionalTime(at), why, id, owner)
	if err != nil {
		return fmt.Errorf("postgres outbox retry %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrConflict
	}
	return nil
}

// PutBlob implements store.Blobs.
func (s *Store) PutBlob(ctx context.Context, key string, data []byte) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO cairn_blobs(key, data) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, key, data); err != nil {
		return fmt.Errorf("postgres blob %s: %w", key, err)
	}
	return nil
}

// GetBlobs implements store.Blobs: one query for every key.
func (s *Store) GetBlobs(ctx context.Context, keys []string) ([][]byte, error) {
	rows, err := s.pool.Query(ctx, `SELECT key, data FROM cairn_blobs WHERE key = ANY($1)`, keys)
	if err != nil {
		return nil, fmt.Errorf("postgres blobs: %w", err)
	}
	found := make(map[string][]byte, len(keys))
	var key string
	var b []byte
	if _, err := pgx.ForEachRow(rows, []any{&key, &b}, func() error {
		found[key] = b
		b = nil
		return nil
	}); err != nil {
		return nil, fmt.Errorf("postgres blobs: %w", err)
	}
	return store.OrderBlobs(keys, found)
}

// MarkUsed implements store.Ledger.
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

// SetOutcome implements store.Ledger.
func (s *Store) SetOutcome(ctx context.Context, id string, outcome []byte) error {
	if outcome == nil {
		outcome = []byte{}
	}
	tag, err := s.pool.Exec(ctx, `UPDATE cairn_used_tokens SET outcome=$1 WHERE id=$2`, outcome, id)
	if err != nil {
		return fmt.Errorf("postgres set outcome %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres set outcome %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// Outcome implements store.Ledger.
func (s *Store) Outcome(ctx context.Context, id string) ([]byte, error) {
	var out []byte
	err := s.pool.QueryRow(ctx, `SELECT outcome FROM cairn_used_tokens WHERE id=$1`, id).Scan(&out)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres outcome %s: %w", id, err)
	}
	return out, nil
}

// Purge implements store.Purger: each batch is one transaction.
func (s *Store) Purge(ctx context.Context, opts store.PurgeOptions) ([]store.Head, error) {
	if err := opts.Check(); err != nil {
		return nil, err
	}
	var purged []store.Head
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Oldest first, by the status index; rows another transaction
		// holds (a session resumed this instant) are left for the next sweep.
		rows, err := tx.Query(ctx, `DELETE FROM cairn_sessions WHERE id IN (
				SELECT id FROM cairn_sessions WHERE status = $1 AND updated_at < $2
				ORDER BY updated_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
			RETURNING id, updated_at, seq, COALESCE(convert_from(summary, 'UTF8')::jsonb->>'nonce', ''), checkpoint`, string(opts.Status), opts.Before, opts.BatchSize())
		if err != nil {
			return err
		}
		var nonces, checkpoints []string
		var seqs []int64
		purged, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Head, error) {
			h := store.Head{Status: opts.Status}
			var nonce, cp string
			err := row.Scan(&h.ID, &h.UpdatedAt, &h.Seq, &nonce, &cp)
			nonces, seqs, checkpoints = append(nonces, nonce), append(seqs, h.Seq), append(checkpoints, cp)
			h.Seq = 0
			return h, err
		})
		if err != nil {
			return err
		}
		if !opts.TombstonesBefore.IsZero() {
			if _, err := tx.Exec(ctx, `DELETE FROM cairn_tombstones WHERE purged_at < $1`, opts.TombstonesBefore); err != nil {
				return err
			}
		}
		if len(purged) == 0 {
			return nil
		}
		ids := make([]string, len(purged))
		for i := range purged {
			ids[i] = purged[i].ID
		}
		if _, err := tx.Exec(ctx, `INSERT INTO cairn_tombstones(session_id, nonce, seq, purged_at, checkpoint)
				SELECT id, nonce, seq, $4, cp FROM unnest($1::text[], $2::text[], $3::bigint[], $5::text[]) AS t(id, nonce, seq, cp)
			ON CONFLICT (session_id) DO UPDATE SET nonce = excluded.nonce, seq = excluded.seq, purged_at = excluded.purged_at, checkpoint = excluded.checkpoint`,
			ids, nonces, seqs, opts.PurgedAt(), checkpoints); err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM cairn_events WHERE session_id = ANY($1)`,
			`DELETE FROM cairn_snapshots WHERE session_id = ANY($1)`,
			`DELETE FROM cairn_blobs WHERE key IN (SELECT key FROM cairn_blob_refs WHERE session_id = ANY($1))
				AND NOT EXISTS (SELECT 1 FROM cairn_blob_refs r WHERE r.key = cairn_blobs.key AND r.session_id <> ALL($1))`,
			`DELETE FROM cairn_blob_refs WHERE session_id = ANY($1)`,
		} {
			if _, err := tx.Exec(ctx, q, ids); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `DELETE FROM cairn_outbox WHERE due IS NULL AND created_at < $1`, opts.Before)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres purge: %w", err)
	}
	return purged, nil
}

// Tombstone implements store.Purger.
func (s *Store) Tombstone(ctx context.Context, id string) (store.Tombstone, error) {
	t, err := scanTombstone(s.pool.QueryRow(ctx, `SELECT `+tombstoneColumns+` FROM cairn_tombstones WHERE session_id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Tombstone{}, fmt.Errorf("tombstone of %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Tombstone{}, fmt.Errorf("postgres tombstone of %s: %w", id, err)
	}
	return t, nil
}

// Tombstones implements store.Purger.
func (s *Store) Tombstones(ctx context.Context, after string, limit int) ([]store.Tombstone, error) {
	var max any // NULL: no limit
	if limit > 0 {
		max = limit
	}
	rows, err := s.pool.Query(ctx, `SELECT `+tombstoneColumns+` FROM cairn_tombstones WHERE session_id > $1 ORDER BY session_id LIMIT $2`, after, max)
	if err != nil {
		return nil, fmt.Errorf("postgres tombstones: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Tombstone, error) { return scanTombstone(row) })
	if err != nil {
		return nil, fmt.Errorf("postgres tombstones: %w", err)
	}
	return out, nil
}

const tombstoneColumns = `session_id, nonce, seq, purged_at, checkpoint`

func scanTombstone(row pgx.Row) (store.Tombstone, error) {
	var t store.Tombstone
	var cp string
	if err := row.Scan(&t.ID, &t.Nonce, &t.Seq, &t.PurgedAt, &cp); err != nil {
		return t, err
	}
	t.PurgedAt = t.PurgedAt.UTC()
	var err error
	t.Checkpoint, err = store.DecodeCheckpoint(cp)
	return t, err
}

// Checkpoint implements store.Checkpoints.
func (s *Store) Checkpoint(ctx context.Context, id string) (session.Checkpoint, error) {
	var text string
	err := s.pool.QueryRow(ctx, `SELECT checkpoint FROM cairn_sessions WHERE id = $1`, id).Scan(&text)
	if errors.Is(err, pgx.ErrNoRows) {
		text, err = "", nil
	}
	if err != nil {
		return session.Checkpoint{}, fmt.Errorf("postgres checkpoint of %s: %w", id, err)
	}
	cp, err := store.DecodeCheckpoint(text)
	switch {
	case err != nil:
		return session.Checkpoint{}, fmt.Errorf("postgres checkpoint of %s: %w", id, err)
	case cp == nil:
		return session.Checkpoint{}, fmt.Errorf("checkpoint of %s: %w", id, store.ErrNotFound)
	}
	return *cp, nil
}

// ruleRows are the columns of the rules an append grants.
type ruleRows struct {
	ids, tenants, tools []string
	granted             []time.Time
	expires             []*time.Time
	data                [][]byte
}

func grantedRules(rules []session.Rule) (ruleRows, error) {
	var out ruleRows
	for _, r := range rules {
		data, err := json.Marshal(r)
		if err != nil {
			return out, err
		}
		out.ids, out.tenants, out.tools = append(out.ids, r.ID), append(out.tenants, r.Tenant), append(out.tools, r.Tool)
		out.granted, out.expires, out.data = append(out.granted, r.GrantedAt), append(out.expires, r.ExpiresAt), append(out.data, data)
	}
	return out, nil
}

// ruleColumns are what a rule is read from.
const ruleColumns = `data, uses, revoked_at, revoked_by`

func scanRule(scan func(...any) error) (session.Rule, error) {
	var data []byte
	var uses int64
	var revokedAt *time.Time
	var revokedBy string
	if err := scan(&data, &uses, &revokedAt, &revokedBy); err != nil {
		return session.Rule{}, err
	}
	var r session.Rule
	if err := json.Unmarshal(data, &r); err != nil {
		return session.Rule{}, fmt.Errorf("rule: %w: %v", store.ErrUnreadable, err)
	}
	r.Uses = uses
	if revokedAt != nil {
		at, by := revokedAt.UTC(), store.DecodeActor(revokedBy)
		r.RevokedAt, r.RevokedBy = &at, &by
	}
	return r, nil
}

// Rules implements store.Rules.
func (s *Store) Rules(ctx context.Context, q store.RuleQuery) ([]session.Rule, error) {
	var tools []string
	if len(q.Tools) > 0 {
		tools = q.Tools
	}
	var live *time.Time
	if !q.LiveAt.IsZero() {
		live = &q.LiveAt
	}
	rows, err := s.pool.Query(ctx, `SELECT `+ruleColumns+` FROM cairn_rules
		WHERE ($1 OR tenant=$2) AND ($3::text[] IS NULL OR tool = ANY($3))
		AND ($4::timestamptz IS NULL OR (revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $4)))
		ORDER BY granted_at, id LIMIT $5`, q.AllTenants, q.Tenant, tools, live, q.Max())
	if err != nil {
		return nil, fmt.Errorf("postgres rules: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (session.Rule, error) { return scanRule(row.Scan) })
	if err != nil {
		return nil, fmt.Errorf("postgres rules: %w", err)
	}
	return out, nil
}

// Rule implements store.Rules.
func (s *Store) Rule(ctx context.Context, id string) (session.Rule, error) {
	r, err := scanRule(s.pool.QueryRow(ctx, `SELECT `+ruleColumns+` FROM cairn_rules WHERE id=$1`, id).Scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("rule %s: %w", id, store.ErrNotFound)
	}
	return r, err
}

// RevokeRule implements store.Rules.
func (s *Store) RevokeRule(ctx context.Context, id string, by session.Actor, at time.Time) (session.Rule, error) {
	if _, err := s.pool.Exec(ctx, `UPDATE cairn_rules SET revoked_at=$1, revoked_by=$2 WHERE id=$3 AND revoked_at IS NULL`,
		at.UTC(), store.EncodeActor(by), id); err != nil {
		return session.Rule{}, fmt.Errorf("postgres revoke rule %s: %w", id, err)
	}
	return s.Rule(ctx, id)
}

// decisionCols are the columns of the decision records an append writes.
type decisionCols struct {
	ids, tenants, sessions, agents, tools, shapes, actions, rules, approvers, names []string
	edited, expired                                                                 []bool
	asked                                                                           []*time.Time
	decided                                                                         []time.Time
	details                                                                         [][]byte
}

func decisionRows(records []store.DecisionRecord) decisionCols {
	var c decisionCols
	for _, d := range records {
		c.ids, c.tenants, c.sessions, c.agents = append(c.ids, d.ID), append(c.tenants, d.Tenant), append(c.sessions, d.SessionID), append(c.agents, d.Agent)
		c.tools, c.shapes, c.actions, c.rules = append(c.tools, d.Tool), append(c.shapes, d.Shape), append(c.actions, string(d.Action)), append(c.rules, d.Rule)
		c.approvers, c.names, c.edited, c.expired = append(c.approvers, d.Approver), append(c.names, d.Name), append(c.edited, d.Edited), append(c.expired, d.Expired)
		var asked *time.Time
		if !d.AskedAt.IsZero() {
			at := d.AskedAt
			asked = &at
		}
		c.asked, c.decided, c.details = append(c.asked, asked), append(c.decided, d.DecidedAt), append(c.details, []byte(d.Detail))
	}
	return c
}

// decisionColumns are what a decision record is read from.
const decisionColumns = `id, tenant, session_id, agent, tool, shape, action, edited, expired, rule, approver, name, asked_at, decided_at, detail`

func scanDecision(scan func(...any) error) (store.DecisionRecord, error) {
	var d store.DecisionRecord
	var asked *time.Time
	var detail []byte
	if err := scan(&d.ID, &d.Tenant, &d.SessionID, &d.Agent, &d.Tool, &d.Shape, &d.Action, &d.Edited, &d.Expired, &d.Rule, &d.Approver, &d.Name,
		&asked, &d.DecidedAt, &detail); err != nil {
		return d, err
	}
	d.DecidedAt = d.DecidedAt.UTC()
	if asked != nil {
		d.AskedAt = asked.UTC()
	}
	if len(detail) > 0 {
		d.Detail = detail
	}
	return d, nil
}

// Decisions implements store.Decisions.
func (s *Store) Decisions(ctx context.Context, q store.DecisionQuery, each func(*store.DecisionRecord) bool) error {
	var since, until *time.Time
	if !q.Since.IsZero() {
		since = &q.Since
	}
	if !q.Until.IsZero() {
		until = &q.Until
	}
	rows, err := s.pool.Query(ctx, `SELECT `+decisionColumns+` FROM cairn_decisions
		WHERE ($1 OR tenant=$2) AND ($3::timestamptz IS NULL OR decided_at >= $3) AND ($4::timestamptz IS NULL OR decided_at < $4)
		ORDER BY decided_at`, q.AllTenants, q.Tenant, since, until)
	if err != nil {
		return fmt.Errorf("postgres decisions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		d, err := scanDecision(rows.Scan)
		if err != nil {
			return fmt.Errorf("postgres decisions: %w", err)
		}
		if !each(&d) {
			return nil
		}
	}
	return rows.Err()
}

// LatestDecisions implements store.Decisions.
func (s *Store) LatestDecisions(ctx context.Context, key store.DecisionKey, limit int) ([]store.DecisionRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+decisionColumns+` FROM cairn_decisions WHERE tenant=$1 AND agent=$2 AND tool=$3 AND shape=$4
		ORDER BY decided_at DESC LIMIT $5`, key.Tenant, key.Agent, key.Tool, key.Shape, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres latest decisions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.DecisionRecord, error) { return scanDecision(row.Scan) })
	if err != nil {
		return nil, fmt.Errorf("postgres latest decisions: %w", err)
	}
	return out, nil
}
